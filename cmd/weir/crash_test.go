package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weirflow/weir/internal/failpoint"
	"github.com/weirflow/weir/sinks/parquet"
)

// The crash tests run `weir job` as a child process: the test binary
// itself, which runs main() when WEIR_RUN_MAIN is set (see TestMain).

var (
	chaosKills = flag.Int("chaos.kills", 20, "SIGKILLs at random moments per job in TestCrashAtRandomMomentsIsExactlyOnce")
)

// child is a running `weir` process.
type child struct {
	cmd *exec.Cmd
	out syncBuffer
}

// syncBuffer is a bytes.Buffer safe to read while the child writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startWeir(t *testing.T, env []string, args ...string) *child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: exec.Command(exe, args...)}
	c.cmd.Env = append(append(os.Environ(), "WEIR_RUN_MAIN=1"), env...)
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Never outlive the test.
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
	})
	return c
}

// wait waits for the child, at most a minute, and returns how it ended:
// nil for exit 0, errKilled for SIGKILL, or another error.
func (c *child) wait(t *testing.T) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				return errKilled
			}
		}
		return err
	case <-time.After(time.Minute):
		_ = c.cmd.Process.Kill()
		<-done
		t.Fatalf("weir %v did not end within a minute:\n%s", c.cmd.Args[1:], c.out.String())
		return nil
	}
}

var errKilled = errors.New("killed by SIGKILL")

// killRoundOptions adjust killRound.
type killRoundOptions struct {
	// tolerateFailures restarts a run that failed by itself (a broker
	// restart may fail one) instead of failing the test.
	tolerateFailures bool
	// afterKill runs after the attempt-th run was killed, before the
	// restart.
	afterKill func(attempt int)
}

// killRoundResult is what a round of kills did.
type killRoundResult struct {
	kills     int
	recovered bool   // some restart recovered from a checkpoint
	out       string // the output of the run that completed
}

// maxKillsPerRound is how many kills a round makes at most before it
// lets a run complete.
const maxKillsPerRound = 20

// killRound runs `weir args...` and kills it with SIGKILL at a random
// moment, again and again on the same folders, until a run completes by
// itself (at most 60 runs). One kill in five lands anywhere, start-up and
// recovery included; the others once the job runs, so that kills do not
// all land during start-up on a loaded machine.
func killRound(t *testing.T, rng *rand.Rand, args []string, o killRoundOptions) killRoundResult {
	t.Helper()
	var r killRoundResult
	for attempt := 0; ; attempt++ {
		if attempt == 60 {
			t.Fatalf("the job did not complete within 60 attempts: restarts make no progress")
		}
		c := startWeir(t, nil, args...)
		if r.kills >= maxKillsPerRound {
			// Enough kills: on a slow machine each restart may commit
			// little before the next kill lands, so let this run finish.
			switch err := c.wait(t); {
			case err == nil:
				r.out = c.out.String()
				return r
			case o.tolerateFailures:
				t.Logf("a run failed (started again): %v\n%s", err, c.out.String())
				continue
			default:
				t.Fatalf("after %d kills: %v\n%s", r.kills, err, c.out.String())
			}
		}
		if rng.IntN(5) == 0 {
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		} else {
			c.waitStarted(t)
			time.Sleep(time.Duration(rng.IntN(600)) * time.Millisecond)
		}
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
		switch err := c.wait(t); {
		case errors.Is(err, errKilled):
			r.kills++
			// Output committed before a kill must survive the restarts
			// exactly once; make sure some was.
			r.recovered = r.recovered || strings.Contains(c.out.String(), "recovering from the checkpoint")
			if o.afterKill != nil {
				o.afterKill(attempt)
			}
		case err == nil:
			r.out = c.out.String()
			return r
		case o.tolerateFailures:
			t.Logf("a run failed (started again): %v\n%s", err, c.out.String())
		default:
			t.Fatalf("after %d kills: %v\n%s", r.kills, err, c.out.String())
		}
	}
}

// crashJob is one job of the crash tests.
type crashJob struct {
	name string
	rows int64
	rate float64
	par  int
}

func (j crashJob) args(out, cp string, par int) []string {
	return []string{"job", j.name, "--rows", fmt.Sprint(j.rows), "--rate", fmt.Sprint(j.rate),
		"--parallelism", fmt.Sprint(par), "--out", out, "--checkpoint-dir", cp,
		"--checkpoint-interval", "50ms", "--target-file-size", "65536", "--seed", "7"}
}

// reference runs the job once without failures and returns its committed
// rows.
func (j crashJob) reference(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	c := startWeir(t, nil, j.args(filepath.Join(dir, "out"), filepath.Join(dir, "cp"), j.par)...)
	if err := c.wait(t); err != nil {
		t.Fatalf("crash-free run failed: %v\n%s", err, c.out.String())
	}
	rows := committedRows(t, filepath.Join(dir, "out"))
	if len(rows) == 0 {
		t.Fatal("the crash-free run committed no rows")
	}
	return rows
}

// runToCompletion restarts the job on the same folders and lets it end
// by itself.
func (j crashJob) runToCompletion(t *testing.T, out, cp string) {
	t.Helper()
	c := startWeir(t, nil, j.args(out, cp, j.par)...)
	if err := c.wait(t); err != nil {
		t.Fatalf("restart failed: %v\n%s", err, c.out.String())
	}
}

// sameRows fails unless got equals want row for row (both sorted).
func sameRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	missing, extra := diffRows(got, want)
	t.Fatalf("%s: %d rows, crash-free run %d; %d missing (first %q), %d extra (first %q)",
		what, len(got), len(want), len(missing), first(missing), len(extra), first(extra))
}

// sameRowsRewound fails unless got holds every row of want and, besides,
// some of want's rows a second time (a rewound span written again), and
// nothing else.
func sameRowsRewound(t *testing.T, what string, got, want []string) {
	t.Helper()
	missing, extra := diffRows(got, want)
	if len(missing) != 0 || len(extra) == 0 {
		t.Fatalf("%s: %d rows missing, %d extra; want none missing and the rewound span again", what, len(missing), len(extra))
	}
	if m, x := diffRows(extra, want); len(x) != 0 {
		t.Fatalf("%s: %d rows the crash-free run does not have (%d of its rows not re-emitted)", what, len(x), len(m))
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// diffRows returns the rows of want not in got and of got not in want,
// as multisets.
func diffRows(got, want []string) (missing, extra []string) {
	count := map[string]int{}
	for _, r := range want {
		count[r]++
	}
	for _, r := range got {
		count[r]--
	}
	for r, n := range count {
		for ; n > 0; n-- {
			missing = append(missing, r)
		}
		for ; n < 0; n++ {
			extra = append(extra, r)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	return
}

var crashJobs = []crashJob{
	{name: "windowed", rows: 100_000, rate: 40_000, par: 2},
	{name: "passthrough", rows: 100_000, rate: 40_000, par: 2},
}

// Kill the job with SIGKILL at random moments, restart it on the same
// checkpoint folder each time until it completes by itself, and compare
// the committed Parquet rows with a crash-free run: nothing missing,
// nothing twice. Rounds on fresh folders repeat until the job was killed
// -chaos.kills times.
func TestCrashAtRandomMomentsIsExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: runs child processes for about a minute")
	}
	for _, j := range crashJobs {
		t.Run(j.name, func(t *testing.T) {
			t.Parallel()
			want := j.reference(t)
			rng := rand.New(rand.NewPCG(uint64(len(j.name)), 1))
			kills, rounds, progressed := 0, 0, false
			for kills < *chaosKills {
				rounds++
				dir := t.TempDir()
				out, cp := filepath.Join(dir, "out"), filepath.Join(dir, "cp")
				r := killRound(t, rng, j.args(out, cp, j.par), killRoundOptions{})
				kills += r.kills
				progressed = progressed || r.recovered
				sameRows(t, fmt.Sprintf("round %d, after %d kills in all", rounds, kills), committedRows(t, out), want)
			}
			if !progressed {
				t.Fatal("no restart recovered from a checkpoint: the kills came too early to test recovery")
			}
			t.Logf("%d kills in %d rounds", kills, rounds)
		})
	}
}

// Kill the job at each named point of the protocol (the third time it is
// reached), restart it until it completes, and compare with a crash-free
// run.
func TestCrashAtEachProtocolPointIsExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: runs child processes")
	}
	for _, j := range crashJobs {
		j.rate = 100_000
		points := []string{failpoint.AfterSnapshot, failpoint.AfterPreCommit, failpoint.AfterManifest, failpoint.MidCommit}
		if j.name == "passthrough" {
			points = points[1:] // no operator, no snapshot
		}
		t.Run(j.name, func(t *testing.T) {
			t.Parallel()
			want := j.reference(t)
			for _, point := range points {
				dir := t.TempDir()
				out, cp := filepath.Join(dir, "out"), filepath.Join(dir, "cp")
				c := startWeir(t, []string{"WEIR_FAILPOINT=" + point + "@3"}, j.args(out, cp, j.par)...)
				if err := c.wait(t); !errors.Is(err, errKilled) {
					t.Fatalf("%s: the job was not killed at the failpoint: %v\n%s", point, err, c.out.String())
				}
				j.runToCompletion(t, out, cp)
				sameRows(t, "killed "+point, committedRows(t, out), want)
			}
		})
	}
}

// A second instance on the same checkpoint folder fails at once with a
// clear error, and the first one's output is untouched by it.
func TestSecondInstanceIsFenced(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	j := crashJob{name: "windowed", rows: 60_000, rate: 30_000, par: 2}
	want := j.reference(t)
	dir := t.TempDir()
	out, cp := filepath.Join(dir, "out"), filepath.Join(dir, "cp")
	first := startWeir(t, nil, j.args(out, cp, j.par)...)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(first.outString(), "fresh start") {
		if time.Now().After(deadline) {
			t.Fatalf("the first instance did not start:\n%s", first.outString())
		}
		time.Sleep(10 * time.Millisecond)
	}
	second := startWeir(t, nil, j.args(out, cp, 1)...)
	err := second.wait(t)
	if err == nil || errors.Is(err, errKilled) || !strings.Contains(second.out.String(), "locked by another running job") {
		t.Fatalf("second instance: want a clear lock error, got %v:\n%s", err, second.out.String())
	}
	if err := first.wait(t); err != nil {
		t.Fatalf("first instance: %v\n%s", err, first.out.String())
	}
	sameRows(t, "with a fenced second instance", committedRows(t, out), want)
}

// waitStarted waits until the child printed how it starts (fresh, or
// recovering from a checkpoint), or ended, at most 30 s.
func (c *child) waitStarted(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out := c.out.String()
		if strings.Contains(out, "fresh start") || strings.Contains(out, "recovering from") || strings.Contains(out, "restoring savepoint") || strings.Contains(out, "weir:") {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// outString reads the child's output while it runs.
func (c *child) outString() string {
	return c.out.String()
}

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stopWithSavepoint waits until the child committed something, stops it
// with `weir savepoint --stop` and returns the savepoint's folder.
func stopWithSavepoint(t *testing.T, c *child, cp, out string) string {
	t.Helper()
	waitFor(t, "a first commit", func() bool {
		files, _ := os.ReadDir(filepath.Join(out, "_weir", "commits", "windowed"))
		return len(files) > 0
	})
	res, err := runCLI(t, "savepoint", "--checkpoint-dir", cp, "--stop", "--timeout", "30s")
	if err != nil {
		t.Fatalf("weir savepoint: %v\n%s\njob output:\n%s", err, res, c.out.String())
	}
	if err := c.wait(t); err != nil {
		t.Fatalf("the job did not stop cleanly after its savepoint: %v\n%s", err, c.out.String())
	}
	_, loc, ok := strings.Cut(strings.TrimSpace(res), ": ")
	if !ok || !strings.HasPrefix(res, "savepoint of epoch ") {
		t.Fatalf("unexpected savepoint output %q", res)
	}
	return loc
}

// Stop with a savepoint and resume from it with parallelism 1 -> 4 -> 2:
// the table ends up with exactly the crash-free run's rows. Then resuming
// from the first (older) savepoint again rewinds: the span after it is
// committed a second time under new epoch numbers, nothing skipped.
func TestSavepointRescaleAndRewind(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	j := crashJob{name: "windowed", rows: 100_000, rate: 25_000, par: 2}
	want := j.reference(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	cp1, cp2, cp3, cp4 := filepath.Join(dir, "cp1"), filepath.Join(dir, "cp2"), filepath.Join(dir, "cp3"), filepath.Join(dir, "cp4")
	first := startWeir(t, nil, j.args(out, cp1, 1)...)
	sp1 := stopWithSavepoint(t, first, cp1, out)
	second := startWeir(t, nil, append(j.args(out, cp2, 4), "--from-savepoint", sp1)...)
	waitFor(t, "the restore", func() bool { return strings.Contains(second.outString(), "restoring savepoint") })
	time.Sleep(300 * time.Millisecond)
	sp2 := stopWithSavepoint(t, second, cp2, out)
	third := startWeir(t, nil, append(j.args(out, cp3, 2), "--from-savepoint", sp2)...)
	if err := third.wait(t); err != nil {
		t.Fatalf("third run: %v\n%s", err, third.out.String())
	}
	sameRows(t, "after savepoints with parallelism 1 -> 4 -> 2", committedRows(t, out), want)

	before, err := parquet.CommittedFiles(out)
	if err != nil {
		t.Fatal(err)
	}
	var highest uint64
	for _, f := range before {
		highest = max(highest, f.Epoch)
	}
	rewind := startWeir(t, nil, append(j.args(out, cp4, 2), "--from-savepoint", sp1)...)
	if err := rewind.wait(t); err != nil {
		t.Fatalf("rewound run: %v\n%s", err, rewind.out.String())
	}
	sameRowsRewound(t, "after rewinding to the first savepoint", committedRows(t, out), want)
	after, _ := parquet.CommittedFiles(out)
	for _, f := range after[len(before):] {
		if f.Epoch <= highest {
			t.Fatalf("the rewound run committed epoch %d, not above the highest committed before (%d)", f.Epoch, highest)
		}
	}
}
