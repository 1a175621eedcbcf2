package nexmark

import (
	"context"
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/weirflow/weir/arrowflow"
)

func TestConfigDefaults(t *testing.T) {
	got := mustNew(t, Config{}).Config()
	want := Config{
		EventsPerSecond: 10_000, Splits: 8, BatchSize: 1024, OutOfOrderGroupSize: 1,
		BaseTime:          time.Date(2015, 7, 15, 0, 0, 0, 0, time.UTC),
		AvgPersonByteSize: 200, AvgAuctionByteSize: 500, AvgBidByteSize: 100,
		HotAuctionRatio: 2, HotSellersRatio: 4, HotBiddersRatio: 4,
		NumActivePeople: 1000, NumInFlightAuctions: 100,
	}
	if got != want {
		t.Fatalf("defaults\n got %+v\nwant %+v", got, want)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Events: -1}, "Events is -1"},
		{Config{EventsPerSecond: -5}, "EventsPerSecond is -5"},
		{Config{Splits: -1}, "Splits is -1"},
		{Config{BatchSize: -1}, "BatchSize is -1"},
		{Config{BatchSize: 1<<20 + 1}, "BatchSize 1048577 is too large"},
		{Config{RateLimit: math.NaN()}, "RateLimit is NaN"},
		{Config{RateLimit: -1}, "RateLimit is -1"},
		{Config{OutOfOrderGroupSize: -3}, "OutOfOrderGroupSize is -3"},
		{Config{OutOfOrderGroupSize: 953 * 2}, "multiple of 953"},
		{Config{WatermarkHoldback: -time.Second}, "WatermarkHoldback is -1s"},
		{Config{AvgBidByteSize: -1}, "AvgBidByteSize is -1"},
		{Config{AvgAuctionByteSize: 1 << 20, BatchSize: 4096}, "BatchSize 4096 is too large for events of up to 1048576 bytes"},
		{Config{HotAuctionRatio: -2}, "HotAuctionRatio is -2"},
		{Config{NumActivePeople: 1<<30 + 1}, "NumActivePeople 1073741825 is too large"},
		{Config{BaseTime: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}, "BaseTime 3000-01-01"},
	} {
		_, err := New(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): error %v, want one containing %q", tc.cfg, err, tc.want)
		}
	}
}

func TestSplitsAndPositions(t *testing.T) {
	src := mustNew(t, Config{Splits: 3})
	ids, err := src.Splits(context.Background())
	if err != nil || strings.Join(ids, ",") != "nexmark-0,nexmark-1,nexmark-2" {
		t.Fatalf("Splits: %v, %v", ids, err)
	}
	pos := func(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }
	for _, tc := range []struct {
		splits []arrowflow.SplitState
		want   string
	}{
		{[]arrowflow.SplitState{{Split: "nexmark-3"}}, `unknown split "nexmark-3"`},
		{[]arrowflow.SplitState{{Split: "nexmark-01"}}, `unknown split "nexmark-01"`},
		{[]arrowflow.SplitState{{Split: "datagen-0"}}, `unknown split "datagen-0"`},
		{[]arrowflow.SplitState{{Split: "nexmark-1"}, {Split: "nexmark-1"}}, "given twice"},
		{[]arrowflow.SplitState{{Split: "nexmark-1", Position: []byte{1, 2}}}, "malformed position"},
		{[]arrowflow.SplitState{{Split: "nexmark-1", Position: pos(3)}}, "does not belong to it"},
		{[]arrowflow.SplitState{{Split: "nexmark-1", Position: pos(1 << 63)}}, "does not belong to it"},
	} {
		if _, err := src.Open(nil, tc.splits); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%v): %v, want an error containing %q", tc.splits, err, tc.want)
		}
	}
	rd := open(t, src, newMem(t), []arrowflow.SplitState{{Split: "nexmark-2", Position: pos(302)}})
	got, err := rd.Positions()
	if err != nil || len(got) != 1 || got[0].Split != "nexmark-2" || binary.BigEndian.Uint64(got[0].Position) != 302 {
		t.Fatalf("Positions after Open at 302: %v, %v", got, err)
	}
	events, _ := read(t, rd, 1)
	checkEvents(t, src.Config(), events, 302, 3)
	rd.Close()
	if _, err := rd.Next(context.Background()); err == nil {
		t.Fatal("Next on a closed reader: no error")
	}
}
