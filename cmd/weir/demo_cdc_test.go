package main

import (
	"maps"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirflow/weir/internal/cdcgen"
)

// The CDC demo (embedded Kafka, Debezium changes of an accounts table,
// a SQL job into two Iceberg upsert tables) checks its own tables: the
// mirror equal to the generator's final state row for row, the totals
// per owner equal to those of that state. Run again on the same folder,
// it sends nothing and the checks still hold.
func TestDemoCDCRunsAndChecksItself(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	args := []string{"demo", "cdc", "--dir", dir, "--events", "40000", "--keys", "3000", "--partitions", "3",
		"--parallelism", "2", "--rate", "0", "--checkpoint-interval", "100ms"}
	out, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("demo cdc failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		"check: bank.accounts equals the source table after its 40000 changes, row for row",
		"check: bank.owner_totals equals the accounts and balance per owner",
		"change events and their tombstones) sent in this run", "table bank.owner_totals: 5 rows",
		"weir table compact --warehouse",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("demo cdc output lacks %q:\n%s", want, out)
		}
	}
	again, err := runCLI(t, args...)
	if err != nil || !strings.Contains(again, "producer done: 0 of the") || !strings.Contains(again, "check: bank.accounts equals the source table") {
		t.Fatalf("second run: %v\n%s", err, again)
	}
	// Another history on the same topic is refused, not mixed in.
	other, err := runCLI(t, append(args[:len(args):len(args)], "--keys", "2000")...)
	if err == nil || !strings.Contains(err.Error(), "--fresh") {
		t.Fatalf("a run with other --keys on the same folder: %v\n%s", err, other)
	}
}

// The demo killed with SIGKILL at random moments (its broker with it),
// then run to completion, passes its checks: the mirror equals the
// source table, the totals count every change once.
func TestDemoCDCCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: runs child processes")
	}
	dir := filepath.Join(t.TempDir(), "demo")
	args := []string{"demo", "cdc", "--dir", dir, "--events", "80000", "--keys", "5000", "--partitions", "3",
		"--parallelism", "2", "--rate", "40000", "--checkpoint-interval", "100ms"}
	r := killRound(t, rand.New(rand.NewPCG(21, 3)), args, killRoundOptions{})
	if r.kills == 0 || !r.recovered {
		t.Fatalf("%d kills, recovered %v: nothing tested\n%s", r.kills, r.recovered, r.out)
	}
	for _, want := range []string{"check: bank.accounts equals the source table", "check: bank.owner_totals equals"} {
		if !strings.Contains(r.out, want) {
			t.Fatalf("after %d kills, the last run's output lacks %q:\n%s", r.kills, want, r.out)
		}
	}
	t.Logf("%d kills", r.kills)
}

// The demo's checks notice a missing row, an extra one and a changed
// one, in the mirror and in the totals.
func TestDemoCDCChecksNoticeDifferences(t *testing.T) {
	_, want := cdcgen.History(cdcgen.Config{Keys: 50, Seed: 1}, 500)
	if len(want) < 3 {
		t.Fatalf("a history of %d rows", len(want))
	}
	if err := compareAccounts(maps.Clone(want), want); err != nil {
		t.Fatalf("equal tables: %v", err)
	}
	var ids []int64
	for id := range want {
		ids = append(ids, id)
	}
	missing, extra, changed := maps.Clone(want), maps.Clone(want), maps.Clone(want)
	delete(missing, ids[0])
	extra[1000] = cdcgen.Account{ID: 1000, Owner: "o1", Balance: 5}
	a := changed[ids[1]]
	a.Balance++
	changed[ids[1]] = a
	for name, got := range map[string]map[int64]cdcgen.Account{"missing": missing, "extra": extra, "changed": changed} {
		if compareAccounts(got, want) == nil {
			t.Errorf("%s: no difference reported", name)
		}
		if compareTotals(ownerTotalsOf(got), ownerTotalsOf(want)) == nil {
			t.Errorf("%s: no difference in the totals reported", name)
		}
	}
}

func TestDemoCDCRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "cdc", "--events", "0"},
		{"demo", "cdc", "--keys", "0"},
		{"demo", "cdc", "--parallelism", "0"},
		{"demo", "cdc", "--parallelism", "500"},
		{"demo", "cdc", "--partitions", "0"},
		{"demo", "cdc", "--rate", "-1"},
		{"demo", "cdc", "--checkpoint-interval", "0s"},
	} {
		if _, err := runCLI(t, append(args, "--dir", t.TempDir())...); err == nil {
			t.Errorf("weir %s succeeded", strings.Join(args, " "))
		}
	}
}
