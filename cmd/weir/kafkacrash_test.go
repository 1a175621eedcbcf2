package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/weirflow/weir/internal/failpoint"
	"github.com/weirflow/weir/internal/kafkatest"
)

// The Kafka crash tests: `weir gen` fills a topic on an in-process kfake
// broker (a real Kafka-protocol broker over TCP on 127.0.0.1); `weir job
// kafka-windowed` runs as a child process reading it, aggregating per
// key in one-second windows and writing to another topic in
// transactions. Whatever the kills, a read_committed consumer of the
// output must see exactly the records of a crash-free run, each once.

const kafkaInputRows = 150_000

// kafkaRig is a broker with the input topic filled.
type kafkaRig struct {
	broker *kafkatest.Broker
	want   []string // the crash-free run's output values, sorted
	topics int
}

func newKafkaRig(t *testing.T, persisted bool) *kafkaRig {
	t.Helper()
	dir := ""
	if persisted {
		dir = t.TempDir()
	}
	r := &kafkaRig{broker: kafkatest.Start(t, dir, 4)}
	out, err := runCLI(t, "gen", "--brokers", r.broker.Addr(), "--topic", "events", "--count", fmt.Sprint(kafkaInputRows), "--seed", "7")
	if err != nil {
		t.Fatalf("weir gen: %v\n%s", err, out)
	}
	if !strings.Contains(out, fmt.Sprintf("produced %d rows", kafkaInputRows)) {
		t.Fatalf("weir gen: %s", out)
	}
	topic, cp := r.fresh(t)
	c := startWeir(t, nil, r.args(topic, cp)...)
	if err := c.wait(t); err != nil {
		t.Fatalf("crash-free run failed: %v\n%s", err, c.out.String())
	}
	r.want = r.output(t, topic)
	if len(r.want) == 0 {
		t.Fatal("the crash-free run wrote nothing")
	}
	return r
}

// fresh returns a new output topic and checkpoint folder.
func (r *kafkaRig) fresh(t *testing.T) (topic, cp string) {
	r.topics++
	return fmt.Sprintf("windows-%d", r.topics), filepath.Join(t.TempDir(), "cp")
}

func (r *kafkaRig) args(topic, cp string, extra ...string) []string {
	return append([]string{"job", "kafka-windowed", "--brokers", r.broker.Addr(), "--in", "events", "--out", topic,
		"--parallelism", "2", "--checkpoint-dir", cp, "--checkpoint-interval", "50ms"}, extra...)
}

func (r *kafkaRig) output(t *testing.T, topic string) []string {
	t.Helper()
	return kafkatest.Values(kafkatest.ReadCommitted(t, []string{r.broker.Addr()}, topic))
}

// runToEnd restarts the job until it completes by itself (a broker
// restart may fail a run; it is started again), at most 20 times.
func (r *kafkaRig) runToEnd(t *testing.T, topic, cp string, extra ...string) string {
	t.Helper()
	var log strings.Builder
	for attempt := 0; attempt < 20; attempt++ {
		c := startWeir(t, nil, r.args(topic, cp, extra...)...)
		err := c.wait(t)
		log.WriteString(c.out.String())
		if err == nil {
			return log.String()
		}
		t.Logf("restart %d failed (run again): %v\n%s", attempt, err, c.out.String())
	}
	t.Fatalf("the job did not complete in 20 runs:\n%s", log.String())
	return ""
}

// Random kills, at least -chaos.kills of them, in rounds on fresh output
// topics; in every third round the broker also restarts (cleanly, data
// persisted) between a kill and the job's restart.
func TestKafkaCrashAtRandomMomentsIsExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: runs child processes")
	}
	r := newKafkaRig(t, true)
	rng := rand.New(rand.NewPCG(11, 1))
	kills, rounds, recovered, brokerRestarts := 0, 0, false, 0
	for kills < *chaosKills {
		rounds++
		topic, cp := r.fresh(t)
		res := killRound(t, rng, r.args(topic, cp), killRoundOptions{
			tolerateFailures: true,
			afterKill: func(attempt int) {
				if rounds%3 == 0 && attempt == 1 {
					r.broker.Restart()
					brokerRestarts++
				}
			},
		})
		kills += res.kills
		recovered = recovered || res.recovered
		sameRows(t, fmt.Sprintf("round %d, after %d kills in all", rounds, kills), r.output(t, topic), r.want)
	}
	if !recovered {
		t.Fatal("no restart recovered from a checkpoint: the kills came too early to test recovery")
	}
	t.Logf("%d kills in %d rounds, %d broker restarts", kills, rounds, brokerRestarts)
}

// A kill at each named point of the protocol, including after the sink
// put records of the next epoch into an open transaction before that
// epoch's manifest exists; then a restart to the end.
func TestKafkaCrashAtEachProtocolPointIsExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: runs child processes")
	}
	r := newKafkaRig(t, false)
	for _, point := range []string{failpoint.AfterSnapshot, failpoint.AfterPreCommit, failpoint.AfterManifest, failpoint.MidCommit, failpoint.NextEpochWritten} {
		topic, cp := r.fresh(t)
		c := startWeir(t, []string{"WEIR_FAILPOINT=" + point + "@3"}, r.args(topic, cp)...)
		if err := c.wait(t); !errors.Is(err, errKilled) {
			t.Fatalf("%s: the job was not killed at the failpoint: %v\n%s", point, err, c.out.String())
		}
		r.runToEnd(t, topic, cp)
		sameRows(t, "killed at "+point, r.output(t, topic), r.want)
	}
}

// The broker restarts (cleanly, persisted) while the job runs, and again
// after a kill with transactions pre-committed but not committed.
func TestKafkaBrokerRestartIsExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: runs child processes")
	}
	r := newKafkaRig(t, true)
	topic, cp := r.fresh(t)
	c := startWeir(t, []string{"WEIR_FAILPOINT=" + failpoint.AfterManifest + "@4"}, r.args(topic, cp)...)
	if err := c.wait(t); !errors.Is(err, errKilled) {
		t.Fatalf("the job was not killed at the failpoint: %v\n%s", err, c.out.String())
	}
	r.broker.Restart()
	c = startWeir(t, nil, r.args(topic, cp)...)
	c.waitStarted(t)
	time.Sleep(300 * time.Millisecond)
	r.broker.Restart() // under the running job
	if err := c.wait(t); err != nil {
		t.Logf("the run under the broker restart failed (run again): %v", err)
		r.runToEnd(t, topic, cp)
	}
	sameRows(t, "with broker restarts", r.output(t, topic), r.want)
}

// The job is down longer than the transaction timeout after the manifest
// of an epoch was written and before its transactions were committed: the
// broker aborts them. On restart weir finds them aborted and computes the
// epoch again from the checkpoint before: nothing lost, nothing twice.
// The kill comes after the manifest of the first epoch with records in
// its transactions. The run uses transactional ids of its own: kfake keeps
// the timeout of a transactional id's first InitProducerID when the id is
// initialized again (Kafka takes the new one), and the rig's crash-free
// run initialized the default ids with the 15-minute default.
func TestKafkaTransactionTimeoutRecomputesTheEpoch(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: runs child processes")
	}
	r := newKafkaRig(t, false)
	topic, cp := r.fresh(t)
	timeout := []string{"--transaction-timeout", "2s", "--transactional-id-prefix", "timeout-test"}
	c := startWeir(t, []string{"WEIR_FAILPOINT=" + failpoint.AfterOutputManifest}, r.args(topic, cp, timeout...)...)
	if err := c.wait(t); !errors.Is(err, errKilled) {
		t.Fatalf("the job was not killed at the failpoint: %v\n%s", err, c.out.String())
	}
	before := r.output(t, topic)
	if len(before) >= len(r.want) {
		t.Fatalf("the killed epoch was already visible (%d of %d records)", len(before), len(r.want))
	}
	time.Sleep(4 * time.Second) // twice the timeout: the broker aborts the open transactions
	log := r.runToEnd(t, topic, cp, timeout...)
	if !strings.Contains(log, "computing it again from the checkpoint before") {
		t.Fatalf("the restart did not find the final epoch aborted and recompute it:\n%s", log)
	}
	sameRows(t, "after a transaction timeout", r.output(t, topic), r.want)
}

// kcatValues reads topic to its end with kcat (librdkafka), an independent
// Kafka client, at the given isolation level, and returns the values
// sorted.
func kcatValues(t *testing.T, broker, topic, isolation string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", "-C", "-b", broker, "-t", topic, "-o", "beginning", "-e", "-q",
		"-X", "isolation.level="+isolation, "-f", "%s\n")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kcat: %v\n%s", err, stderr.String())
	}
	vals := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(out) == 0 {
		vals = nil
	}
	sort.Strings(vals)
	return vals
}

// librdkafka (through kcat) reads the output topic in read_committed mode
// and agrees with franz-go: while a killed job's transaction holds records
// of an uncommitted epoch (they are in the log: read_uncommitted sees
// them), and after the restart committed everything.
func TestKafkaOutputReadByLibrdkafka(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: runs child processes")
	}
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat (librdkafka) is not installed; .ci/run installs the Debian package kcat")
	}
	r := newKafkaRig(t, false)
	topic, cp := r.fresh(t)
	c := startWeir(t, []string{"WEIR_FAILPOINT=" + failpoint.NextEpochWritten + "@3"}, r.args(topic, cp)...)
	if err := c.wait(t); !errors.Is(err, errKilled) {
		t.Fatalf("the job was not killed at the failpoint: %v\n%s", err, c.out.String())
	}
	addr := r.broker.Addr()
	committed := kcatValues(t, addr, topic, "read_committed")
	sameRows(t, "kcat read_committed vs franz-go, open transaction", committed, r.output(t, topic))
	if all := kcatValues(t, addr, topic, "read_uncommitted"); len(all) <= len(committed) {
		t.Fatalf("read_uncommitted saw %d records, read_committed %d: the killed run left no open transaction to hide", len(all), len(committed))
	}
	r.runToEnd(t, topic, cp)
	sameRows(t, "kcat read_committed, after the restart", kcatValues(t, addr, topic, "read_committed"), r.want)
}
