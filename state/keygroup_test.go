package state

import (
	"math/rand/v2"
	"testing"
)

func TestKeyGroupRangesPartitionAndAgreeWithSubtaskOf(t *testing.T) {
	for _, maxPar := range []int{1, 2, 7, 128, 1000, 32768} {
		for _, par := range []int{1, 2, 3, 4, 5, 7, 16, 127, 128, 1000} {
			if par > maxPar {
				continue
			}
			next := 0
			for s := 0; s < par; s++ {
				r := RangeOf(s, maxPar, par)
				if r.Start != next {
					t.Fatalf("maxPar=%d par=%d: subtask %d range %s does not start where the previous ended (%d)", maxPar, par, s, r, next)
				}
				if r.Len() < 1 {
					t.Fatalf("maxPar=%d par=%d: subtask %d owns no key group: %s", maxPar, par, s, r)
				}
				next = r.End
			}
			if next != maxPar {
				t.Fatalf("maxPar=%d par=%d: ranges end at %d", maxPar, par, next)
			}
			for kg := 0; kg < maxPar; kg++ {
				s := SubtaskOf(kg, maxPar, par)
				if !RangeOf(s, maxPar, par).Contains(kg) {
					t.Fatalf("maxPar=%d par=%d: key group %d -> subtask %d whose range %s does not contain it", maxPar, par, kg, s, RangeOf(s, maxPar, par))
				}
			}
		}
	}
}

func TestKeyGroupOfIsInRangeAndSpreads(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, maxPar := range []int{1, 128, 1000} {
		counts := make([]int, maxPar)
		const n = 200000
		for i := 0; i < n; i++ {
			kg := KeyGroupOf(rng.Uint64(), maxPar)
			if kg < 0 || kg >= maxPar {
				t.Fatalf("KeyGroupOf out of range: %d for maxPar %d", kg, maxPar)
			}
			counts[kg]++
		}
		// Uniform hashes must fill every key group about evenly (each
		// bucket's expected count is n/maxPar; allow 25% either way, far
		// beyond statistical noise at these sizes).
		want := n / maxPar
		for kg, c := range counts {
			if c < want*3/4 || c > want*5/4 {
				t.Fatalf("maxPar=%d: key group %d got %d hashes, want about %d", maxPar, kg, c, want)
			}
		}
	}
	if KeyGroupOf(^uint64(0), 128) != 127 || KeyGroupOf(0, 128) != 0 {
		t.Fatal("extremes of the hash space must map to the first and last key group")
	}
}

func TestRangeOverlaps(t *testing.T) {
	cases := []struct {
		a, b KeyGroupRange
		want bool
	}{
		{KeyGroupRange{0, 4}, KeyGroupRange{4, 8}, false},
		{KeyGroupRange{0, 5}, KeyGroupRange{4, 8}, true},
		{KeyGroupRange{3, 3}, KeyGroupRange{0, 8}, false},
		{KeyGroupRange{2, 6}, KeyGroupRange{3, 4}, true},
	}
	for _, c := range cases {
		if got := c.a.Overlaps(c.b); got != c.want {
			t.Errorf("%s overlaps %s = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := c.b.Overlaps(c.a); got != c.want {
			t.Errorf("%s overlaps %s = %v, want %v", c.b, c.a, got, c.want)
		}
	}
}

func TestValidateParallelism(t *testing.T) {
	if err := ValidateParallelism(4, 128); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]int{{0, 128}, {129, 128}, {1, 0}} {
		if err := ValidateParallelism(c[0], c[1]); err == nil {
			t.Errorf("ValidateParallelism(%d, %d) accepted", c[0], c[1])
		}
	}
}
