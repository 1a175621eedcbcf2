// Package sql will be weir's streaming SQL front end: Flink-dialect
// scripts (CREATE TABLE ... WITH (...), CREATE VIEW, SET, INSERT INTO ...
// SELECT) parsed, validated and planned into an arrowflow graph.
package sql
