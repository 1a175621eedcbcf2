// Package nexmark is the Nexmark benchmark's event generator as a weir
// source: an online auction's stream of new people, new auctions and bids,
// as Apache Beam's Nexmark generator (the reference, reused by Flink's
// nexmark suite) produces it, in Arrow record batches of EventSchema.
//
// # Events
//
// Event ids count from 0. Of every 50 consecutive ids the first is a
// person, the next three are auctions and the other 46 are bids. Person
// and auction ids are derived from the event id (the first of each is
// 1000); sellers and bidders are recent people (hot ones most of the
// time), and bids are for recent auctions (hot ones most of the time).
// Prices, strings, channels and the extra padding that brings events to
// their average sizes follow the reference; docs/nexmark.md lists every
// difference.
//
// Event n's time is Config.BaseTime + n/Config.EventsPerSecond seconds,
// floored to the millisecond. With Config.OutOfOrderGroupSize > 1,
// positions are shuffled within groups of that size, as in the reference:
// position p emits event id b + (p-b)*953 mod size, b the group's first
// position, so times go back by up to a group's span.
//
// # Determinism
//
// The event at position p is a pure function of (Config, p): its values
// are drawn from a java.util.Random (reproduced bit for bit) seeded with
// its event id, XOR a hash of Config.Seed that is 0 for Seed 0. With
// Seed 0 the reference's fields hold exactly the values of Beam's
// generator (one generator, firstEventId 0). Batch size, rate limit,
// splits, parallelism and restarts never change the events.
//
// # Splits
//
// Positions are dealt to Config.Splits splits: split i generates the
// positions p with p mod Splits = i, in increasing order, so that every
// split advances through event time at the same pace. A split's position,
// recorded at checkpoints, is its next position: 8 bytes, big endian. The
// union of the splits is exactly the sequence a single split generates.
// A reader generates one batch from one split at a time, round-robin over
// its unfinished splits.
//
// # Watermarks
//
// A split's watermark is the reference's: the time of the first event of
// the out-of-order group holding its next position (nothing later in the
// split is earlier), minus Config.WatermarkHoldback, minus 1ns, so that no
// event is ever late. Source.MaxOutOfOrderness bounds how far behind
// earlier events of its split an event can be.
//
// # Queries
//
// Persons, Auctions and Bids (and Project, which honours a selection
// vector) turn a batch of events into a flat batch of one event type,
// vectorized, for the benchmark queries.
package nexmark
