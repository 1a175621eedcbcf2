package status

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/weirflow/weir/arrowflow"
)

// Status is the JSON document GET /status returns.
type Status struct {
	// Job is the job's name.
	Job string `json:"job"`
	// State is the job's state.
	State State `json:"state"`
	// Error is the error the job failed (or was cancelled) with.
	Error string `json:"error,omitempty"`
	// StartTime is when the job started (recovery included).
	StartTime time.Time `json:"start_time"`
	// EndTime is when the job ended, once it did.
	EndTime *time.Time `json:"end_time,omitempty"`
	// UptimeSeconds is the time since StartTime, or until EndTime.
	UptimeSeconds float64 `json:"uptime_seconds"`
	// EpochsCompleted is the number of epochs this run recorded and
	// committed.
	EpochsCompleted int64 `json:"epochs_completed"`
	// LatestCheckpoint is the last completed epoch's checkpoint, null
	// before the first.
	LatestCheckpoint *CheckpointInfo `json:"latest_checkpoint"`
	// LastSavepoint is the last savepoint POST /savepoint took, if any.
	LastSavepoint *SavepointInfo `json:"last_savepoint,omitempty"`
	// Watermark is the job's watermark, the minimum over its tasks:
	// RFC 3339 with milliseconds, "-inf" before every task saw progress,
	// "+inf" once every stream ended.
	Watermark string `json:"watermark"`
	// WatermarkMillis is Watermark in milliseconds since the Unix epoch,
	// absent when it is infinite.
	WatermarkMillis *int64 `json:"watermark_ms,omitempty"`
	// SourceRecordsIn is the number of records the source tasks read.
	SourceRecordsIn int64 `json:"source_records_in"`
	// Tasks are the job's tasks (chains of nodes), in plan order, each
	// with its counters summed over its subtasks and per subtask.
	Tasks []TaskStatus `json:"tasks"`
	// StateBytes is the state every stateful operator holds, in bytes.
	StateBytes int64 `json:"state_bytes"`
	// StateUsage is the state each stateful operator subtask holds.
	StateUsage []StateUsage `json:"state_usage"`
	// SourceLag is each source's lag, for the sources that report one.
	SourceLag []SourceLag `json:"source_lag,omitempty"`
	// SourceRejected counts the records each source rejected (its
	// format could not decode them), for the sources that report it.
	SourceRejected []SourceRejected `json:"source_rejected,omitempty"`
	// LateRows counts the rows each operator subtask that drops late rows
	// (event-time windows and joins: arrowflow.LateRowCounter) dropped
	// because they came behind the watermark, by operator and subtask;
	// empty before the job's operators open and for jobs without such
	// operators.
	LateRows []OperatorLateRows `json:"late_rows"`
	// LateRowsTotal is the sum of LateRows.
	LateRowsTotal int64 `json:"late_rows_total"`
}

// OperatorLateRows is the late rows one operator subtask dropped (those
// it sent to a late-data side output included), as Flink's
// numLateRecordsDropped counts them.
type OperatorLateRows struct {
	// Operator is the operator's name.
	Operator string `json:"operator"`
	// Subtask is the subtask's index, from 0.
	Subtask int `json:"subtask"`
	// Rows is the number of late rows, since the job (re)started.
	Rows int64 `json:"rows"`
}

// SourceRejected is what one source did with the records its format
// rejected, by its error policy.
type SourceRejected struct {
	// Source is the source's name.
	Source string `json:"source"`
	// Skipped is the number of records dropped and counted (policy
	// skip).
	Skipped int64 `json:"skipped"`
	// DeadLettered is the number of records written to the dead-letter
	// destination (policy dlq).
	DeadLettered int64 `json:"dead_lettered"`
}

// CheckpointInfo describes a completed checkpoint.
type CheckpointInfo struct {
	// Epoch is the checkpoint's epoch.
	Epoch uint64 `json:"epoch"`
	// Time is when it was recorded, when the server saw it (see
	// Server.Recorder).
	Time *time.Time `json:"time,omitempty"`
	// Savepoint is set when the epoch was closed as a savepoint.
	Savepoint bool `json:"savepoint,omitempty"`
	// Final is set on the last epoch of a bounded job.
	Final bool `json:"final,omitempty"`
}

// SavepointInfo describes a savepoint taken through POST /savepoint.
type SavepointInfo struct {
	// Epoch is the savepoint's epoch.
	Epoch uint64 `json:"epoch"`
	// Location is the savepoint's folder.
	Location string `json:"location"`
	// Time is when it completed.
	Time time.Time `json:"time"`
	// Stopped is set when the job stopped after it.
	Stopped bool `json:"stopped,omitempty"`
}

// TaskStatus is one task (a chain of nodes joined by forward edges) with
// its counters summed over its subtasks.
type TaskStatus struct {
	// Task names the chain, "a -> b -> c".
	Task string `json:"task"`
	// Parallelism is the number of subtasks.
	Parallelism int `json:"parallelism"`
	// BatchesIn, RowsIn, BatchesOut and RowsOut are the sums of the
	// subtasks' counters.
	BatchesIn  int64 `json:"batches_in"`
	RowsIn     int64 `json:"rows_in"`
	BatchesOut int64 `json:"batches_out"`
	RowsOut    int64 `json:"rows_out"`
	// Queued is the number of messages waiting in the subtasks' input
	// queues.
	Queued int `json:"queued"`
	// Watermark and WatermarkMillis are the minimum over the subtasks.
	Watermark       string `json:"watermark"`
	WatermarkMillis *int64 `json:"watermark_ms,omitempty"`
	// Subtasks are the per-subtask counters.
	Subtasks []SubtaskStatus `json:"subtasks"`
}

// SubtaskStatus is one subtask's counters (see arrowflow.TaskStats).
type SubtaskStatus struct {
	// Subtask is the subtask's index, from 0.
	Subtask int `json:"subtask"`
	// BatchesIn and RowsIn count what the subtask read (from its source or
	// its input queues); BatchesOut and RowsOut what its last node passed
	// on (to its sink or downstream).
	BatchesIn  int64 `json:"batches_in"`
	RowsIn     int64 `json:"rows_in"`
	BatchesOut int64 `json:"batches_out"`
	RowsOut    int64 `json:"rows_out"`
	// Watermark is the last watermark the subtask passed on (see
	// Status.Watermark for the format); WatermarkMillis as a number.
	Watermark       string `json:"watermark"`
	WatermarkMillis *int64 `json:"watermark_ms,omitempty"`
	// Queued and MaxQueued are the messages waiting in the subtask's input
	// queues, now and at most; zero for source tasks.
	Queued    int `json:"queued"`
	MaxQueued int `json:"max_queued"`
	// LastEpoch is the last epoch the subtask acknowledged.
	LastEpoch uint64 `json:"last_epoch"`
}

// StateUsage is the state one stateful operator subtask holds.
type StateUsage struct {
	// Operator is the operator's name.
	Operator string `json:"operator"`
	// Subtask is the subtask's index.
	Subtask int `json:"subtask"`
	// Bytes is the approximate memory held.
	Bytes int64 `json:"bytes"`
	// Keys is the number of keys (groups) held.
	Keys int64 `json:"keys"`
}

// SourceLag is one source's lag.
type SourceLag struct {
	// Source is the source's name.
	Source string `json:"source"`
	// Records is the lag in records, absent when it could not be had.
	Records *int64 `json:"records,omitempty"`
	// Error says why Records is absent.
	Error string `json:"error,omitempty"`
}

// Snapshot returns the job's status now; the lag providers run under
// ctx.
func (s *Server) Snapshot(ctx context.Context) Status {
	v := s.view()
	job, end := v.job, v.end
	now := time.Now()
	st := Status{
		Job: s.cfg.Name, State: v.state, Error: v.err, StartTime: s.start.UTC(),
		LastSavepoint: v.savepoint,
		Tasks:         []TaskStatus{},
		StateUsage:    []StateUsage{},
		LateRows:      []OperatorLateRows{},
		Watermark:     arrowflow.MinEventTime.String(),
	}
	if end.IsZero() {
		st.UptimeSeconds = now.Sub(s.start).Seconds()
	} else {
		e := end.UTC()
		st.EndTime = &e
		st.UptimeSeconds = end.Sub(s.start).Seconds()
	}
	if job == nil {
		st.SourceLag = s.lags(ctx)
		st.SourceRejected = s.rejected()
		return st
	}
	st.EpochsCompleted = job.EpochsCompleted()
	if cp := job.LatestCheckpoint(); cp != nil {
		st.LatestCheckpoint = &CheckpointInfo{Epoch: cp.Epoch, Savepoint: cp.Savepoint, Final: cp.Final}
		if v.recorded.epoch == cp.Epoch && !v.recorded.at.IsZero() {
			t := v.recorded.at.UTC()
			st.LatestCheckpoint.Time = &t
		}
	}
	jobWM := arrowflow.MaxEventTime
	stats := job.Stats()
	byTask := map[string]int{}
	wms := []arrowflow.EventTime{}
	for _, ts := range stats {
		i, ok := byTask[ts.Task]
		if !ok {
			i = len(st.Tasks)
			byTask[ts.Task] = i
			st.Tasks = append(st.Tasks, TaskStatus{Task: ts.Task})
			wms = append(wms, arrowflow.MaxEventTime)
		}
		t := &st.Tasks[i]
		t.Parallelism++
		t.BatchesIn += ts.BatchesIn
		t.RowsIn += ts.RowsIn
		t.BatchesOut += ts.BatchesOut
		t.RowsOut += ts.RowsOut
		t.Queued += ts.Queued
		wms[i] = min(wms[i], ts.Watermark)
		jobWM = min(jobWM, ts.Watermark)
		if s.sourceTask(ts.Task) {
			st.SourceRecordsIn += ts.RowsIn
		}
		sub := SubtaskStatus{
			Subtask: ts.Subtask, BatchesIn: ts.BatchesIn, RowsIn: ts.RowsIn,
			BatchesOut: ts.BatchesOut, RowsOut: ts.RowsOut,
			Queued: ts.Queued, MaxQueued: ts.MaxQueued, LastEpoch: ts.LastEpoch,
		}
		sub.Watermark, sub.WatermarkMillis = watermark(ts.Watermark)
		t.Subtasks = append(t.Subtasks, sub)
	}
	for i := range st.Tasks {
		st.Tasks[i].Watermark, st.Tasks[i].WatermarkMillis = watermark(wms[i])
		sort.Slice(st.Tasks[i].Subtasks, func(a, b int) bool {
			return st.Tasks[i].Subtasks[a].Subtask < st.Tasks[i].Subtasks[b].Subtask
		})
	}
	if len(stats) > 0 {
		st.Watermark, st.WatermarkMillis = watermark(jobWM)
	}
	for _, c := range job.OperatorCounts() {
		st.LateRows = append(st.LateRows, OperatorLateRows{Operator: c.Operator, Subtask: c.Subtask, Rows: c.LateRows})
		st.LateRowsTotal += c.LateRows
	}
	sort.SliceStable(st.LateRows, func(i, j int) bool {
		a, b := st.LateRows[i], st.LateRows[j]
		if a.Operator != b.Operator {
			return a.Operator < b.Operator
		}
		return a.Subtask < b.Subtask
	})
	usage := job.StateUsage()
	s.mu.Lock()
	for name, u := range usage {
		if u.Bytes != 0 || u.Keys != 0 {
			op, _ := splitAccount(name)
			s.stateful[op] = true
		}
	}
	for name, u := range usage {
		// Every node has an account; list those of operators that ever
		// held state, so that a stateful one stays listed when empty.
		if op, sub := splitAccount(name); s.stateful[op] {
			st.StateUsage = append(st.StateUsage, StateUsage{Operator: op, Subtask: sub, Bytes: u.Bytes, Keys: u.Keys})
			st.StateBytes += u.Bytes
		}
	}
	s.mu.Unlock()
	sort.Slice(st.StateUsage, func(i, j int) bool {
		a, b := st.StateUsage[i], st.StateUsage[j]
		if a.Operator != b.Operator {
			return a.Operator < b.Operator
		}
		return a.Subtask < b.Subtask
	})
	st.SourceLag = s.lags(ctx)
	st.SourceRejected = s.rejected()
	return st
}

// rejected calls every rejected-records provider and returns the counts
// sorted by source name.
func (s *Server) rejected() []SourceRejected {
	var out []SourceRejected
	for name, f := range s.cfg.Rejected {
		if f != nil {
			c := f()
			out = append(out, SourceRejected{Source: name, Skipped: c.Skipped, DeadLettered: c.DeadLettered})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Source < out[j].Source })
	return out
}

// watermark formats a watermark for JSON: its text and, when finite, its
// milliseconds.
func watermark(wm arrowflow.EventTime) (string, *int64) {
	if wm == arrowflow.MinEventTime || wm == arrowflow.MaxEventTime {
		return wm.String(), nil
	}
	ms := wm.Time().UnixMilli()
	return wm.String(), &ms
}

// splitAccount splits a state account name "operator[subtask]" (see
// state.MemoryBudget.Account); a name of another form is the operator
// with subtask -1.
func splitAccount(name string) (string, int) {
	i := strings.LastIndexByte(name, '[')
	if i < 0 || !strings.HasSuffix(name, "]") {
		return name, -1
	}
	n, err := strconv.Atoi(name[i+1 : len(name)-1])
	if err != nil {
		return name, -1
	}
	return name[:i], n
}
