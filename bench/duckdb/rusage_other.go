//go:build !unix

package main

import "time"

// processCPU reports -1: process CPU time is read only on Unix.
func processCPU() time.Duration { return -1 }
