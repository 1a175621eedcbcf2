package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/weirflow/weir/internal/failpoint"
)

// newestManifest returns the path of the newest manifest in cp.
func newestManifest(t *testing.T, cp string) string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(cp, "manifests", "*.json"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no manifests in %s (%v)", cp, err)
	}
	slices.Sort(names)
	return names[len(names)-1]
}

// flipByte overwrites one byte of a file in the middle.
func flipByte(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := len(data) / 2
	data[i] ^= 0x5a
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// killAt runs `weir args...` until the failpoint point kills it, and
// fails the test if it ends otherwise.
func killAt(t *testing.T, point string, args ...string) {
	t.Helper()
	c := startWeir(t, []string{"WEIR_FAILPOINT=" + point}, args...)
	if err := c.wait(t); !errors.Is(err, errKilled) {
		t.Fatalf("the job was not killed at the failpoint %s: %v\n%s", point, err, c.out.String())
	}
}

// refusedAsOthers runs `weir args...` and fails the test unless it is
// refused because its output belongs to the checkpoint folder owner; it
// returns what the job printed.
func refusedAsOthers(t *testing.T, owner string, args ...string) string {
	t.Helper()
	c := startWeir(t, nil, args...)
	err := c.wait(t)
	msg := c.out.String()
	if err == nil || errors.Is(err, errKilled) || !strings.Contains(msg, "belong to another job instance") || !strings.Contains(msg, owner) {
		t.Fatalf("a job on the output of %s: want a refusal naming that folder, got %v:\n%s", owner, err, msg)
	}
	return msg
}

// stopAfterCommits runs the job until its output holds a few committed
// epochs, then stops it with SIGINT (a clean stop: the last recorded
// epoch is committed).
func stopAfterCommits(t *testing.T, j crashJob, out, cp string) {
	t.Helper()
	c := startWeir(t, nil, j.args(out, cp, j.par)...)
	waitFor(t, "three committed epochs", func() bool {
		files, _ := os.ReadDir(filepath.Join(out, "_weir", "commits", j.name))
		return len(files) >= 3
	})
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	if err := c.wait(t); err != nil {
		t.Fatalf("stop with SIGINT: %v\n%s", err, c.out.String())
	}
}

// A damaged or missing newest manifest whose epoch a sink has committed
// must not silently rewind: the restart refuses, naming the sink and the
// epochs; --allow-output-rewind resumes from the older checkpoint and
// writes the span again (duplicates, nothing missing).
func TestDamagedNewestManifestRefusesToRewind(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	j := crashJob{name: "windowed", rows: 100_000, rate: 25_000, par: 2}
	want := j.reference(t)
	for _, damage := range []string{"flip a byte", "delete every manifest"} {
		t.Run(damage, func(t *testing.T) {
			dir := t.TempDir()
			out, cp := filepath.Join(dir, "out"), filepath.Join(dir, "cp")
			stopAfterCommits(t, j, out, cp)
			before := committedRows(t, out)
			if damage == "flip a byte" {
				flipByte(t, newestManifest(t, cp))
			} else if err := os.RemoveAll(filepath.Join(cp, "manifests")); err != nil {
				t.Fatal(err)
			}
			c := startWeir(t, nil, j.args(out, cp, j.par)...)
			err := c.wait(t)
			msg := c.out.String()
			if err == nil || errors.Is(err, errKilled) {
				t.Fatalf("restart over a damaged checkpoint folder: want a refusal, got %v:\n%s", err, msg)
			}
			for _, w := range []string{`sink "parquet" has committed epoch`, "--allow-output-rewind", "duplicates"} {
				if !strings.Contains(msg, w) {
					t.Fatalf("the refusal does not say %q:\n%s", w, msg)
				}
			}
			if got := committedRows(t, out); !slices.Equal(got, before) {
				t.Fatalf("the refused restart changed the output: %d rows, %d before", len(got), len(before))
			}
			c = startWeir(t, nil, append(j.args(out, cp, j.par), "--allow-output-rewind")...)
			if err := c.wait(t); err != nil {
				t.Fatalf("restart with --allow-output-rewind: %v\n%s", err, c.out.String())
			}
			sameRowsRewound(t, "after an allowed rewind", committedRows(t, out), want)
		})
	}
}

// A corrupt newest manifest whose epoch no sink committed (the job died
// right after recording it) is passed over with a warning: the epoch is
// computed again from the checkpoint before, exactly once.
func TestCorruptUncommittedManifestIsPassedOver(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	j := crashJob{name: "windowed", rows: 60_000, rate: 100_000, par: 2}
	want := j.reference(t)
	dir := t.TempDir()
	out, cp := filepath.Join(dir, "out"), filepath.Join(dir, "cp")
	killAt(t, failpoint.AfterOutputManifest+"@3", j.args(out, cp, j.par)...)
	flipByte(t, newestManifest(t, cp))
	c := startWeir(t, nil, j.args(out, cp, j.par)...)
	if err := c.wait(t); err != nil {
		t.Fatalf("restart: %v\n%s", err, c.out.String())
	}
	if !strings.Contains(c.out.String(), "corrupt checkpoint manifest") {
		t.Fatalf("the corrupt manifest was not reported:\n%s", c.out.String())
	}
	sameRows(t, "with a corrupt uncommitted manifest", committedRows(t, out), want)
}

// Two checkpoint folders on one Parquet folder: the second job is refused
// before it touches anything, so the first one's pre-committed epoch
// survives and its restart ends with exactly the crash-free rows. Taking
// the output over deliberately fences the first job.
func TestSecondFolderOnOneOutputIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	j := crashJob{name: "windowed", rows: 60_000, rate: 100_000, par: 2}
	want := j.reference(t)
	dir := t.TempDir()
	out, cpA, cpB := filepath.Join(dir, "out"), filepath.Join(dir, "cpA"), filepath.Join(dir, "cpB")
	killAt(t, failpoint.AfterOutputManifest+"@3", j.args(out, cpA, j.par)...)
	if msg := refusedAsOthers(t, cpA, j.args(out, cpB, j.par)...); !strings.Contains(msg, "--take-over-output") {
		t.Fatalf("job B on A's output: the refusal does not name --take-over-output:\n%s", msg)
	}
	j.runToCompletion(t, out, cpA)
	sameRows(t, "job A after job B was refused", committedRows(t, out), want)

	// B takes the output over; A is fenced from then on.
	b := startWeir(t, nil, append(j.args(out, cpB, j.par), "--take-over-output")...)
	if err := b.wait(t); err != nil {
		t.Fatalf("job B with --take-over-output: %v\n%s", err, b.out.String())
	}
	a := startWeir(t, nil, j.args(out, cpA, j.par)...)
	if err := a.wait(t); err == nil || !strings.Contains(a.out.String(), cpB) {
		t.Fatalf("job A after B took its output over: want a refusal naming B's folder, got %v:\n%s", err, a.out.String())
	}
}

// Settings with which a job cannot work are refused at start.
func TestCheckpointSettingsAreChecked(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--checkpoint-interval", "0s"}, "must be positive"},
		{[]string{"--checkpoint-interval", "-1s"}, "must be positive"},
		{[]string{"--checkpoint-retain", "0"}, "at least 2"},
		{[]string{"--checkpoint-retain", "1"}, "at least 2"},
	} {
		args := append([]string{"job", "windowed", "--rows", "1000", "--out", filepath.Join(dir, "out"), "--checkpoint-dir", filepath.Join(dir, "cp")}, c.args...)
		res, err := runCLI(t, args...)
		if err == nil || !strings.Contains(res+err.Error(), c.want) {
			t.Errorf("weir %v: want an error saying %q, got %v: %s", c.args, c.want, err, res)
		}
	}
}

// The same for an Iceberg table: a second checkpoint folder's job is
// refused before it deletes the first one's pre-committed files, and the
// first one's restart ends with exactly the crash-free table.
func TestIcebergSecondFolderOnOneTableIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	want := icebergReference(t)
	dir := t.TempDir()
	wh, cpA, cpB := filepath.Join(dir, "wh"), filepath.Join(dir, "cpA"), filepath.Join(dir, "cpB")
	killAt(t, failpoint.AfterOutputManifest+"@3", icebergArgs(icebergJob, wh, cpA)...)
	refusedAsOthers(t, cpA, icebergArgs(icebergJob, wh, cpB)...)
	runIcebergToEnd(t, wh, cpA)
	sameRows(t, "job A after job B was refused", icebergRows(t, wh, icebergJob.name), want)
}

// The same for a Kafka topic written with transactions: a second
// checkpoint folder's job on the same transactional id prefix and topic is
// refused before it aborts the first one's pre-committed transactions, and
// the first one's restart ends with exactly the crash-free output.
func TestKafkaSecondFolderOnOnePrefixIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	r := newKafkaRig(t, false)
	topic, cpA := r.fresh(t)
	cpB := filepath.Join(t.TempDir(), "cpB")
	killAt(t, failpoint.AfterOutputManifest+"@2", r.args(topic, cpA)...)
	refusedAsOthers(t, cpA, r.args(topic, cpB)...)
	r.runToEnd(t, topic, cpA)
	sameRows(t, "job A after job B was refused", r.output(t, topic), r.want)
}
