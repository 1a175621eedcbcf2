package status

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"github.com/weirflow/weir/arrowflow"
)

// metricsContentType is the content type of the Prometheus text
// exposition format.
const metricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// family is one metric family of the text format: its HELP and TYPE
// lines, then its samples.
type family struct {
	name, typ, help string
	samples         []sample
}

// sample is one line "name{labels} value".
type sample struct {
	labels []string // name, value, name, value, ...
	value  string
}

func (f *family) add(value string, labels ...string) {
	f.samples = append(f.samples, sample{labels: labels, value: value})
}

func (f *family) addInt(v int64, labels ...string) { f.add(strconv.FormatInt(v, 10), labels...) }

// formatFloat writes a sample value: the shortest decimal that reads back
// as v, without exponent for the magnitudes of timestamps, and +Inf, -Inf,
// NaN as the format spells them.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	if math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// watermarkValue is a watermark as a sample value from its JSON form:
// milliseconds since the Unix epoch, -Inf before progress and +Inf at the
// end of the streams.
func watermarkValue(text string, ms *int64) string {
	switch {
	case ms != nil:
		return strconv.FormatInt(*ms, 10)
	case text == arrowflow.MaxEventTime.String():
		return "+Inf"
	}
	return "-Inf"
}

// labelEscaper escapes label values: backslash, double quote and line
// feed, as the text format requires.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// helpEscaper escapes HELP text: backslash and line feed.
var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

// writeFamilies writes the families that have samples in the text
// exposition format.
func writeFamilies(b *bytes.Buffer, fams []*family) {
	for _, f := range fams {
		if len(f.samples) == 0 {
			continue
		}
		b.WriteString("# HELP ")
		b.WriteString(f.name)
		b.WriteByte(' ')
		helpEscaper.WriteString(b, f.help)
		b.WriteString("\n# TYPE ")
		b.WriteString(f.name)
		b.WriteByte(' ')
		b.WriteString(f.typ)
		b.WriteByte('\n')
		for _, s := range f.samples {
			b.WriteString(f.name)
			if len(s.labels) > 0 {
				b.WriteByte('{')
				for i := 0; i+1 < len(s.labels); i += 2 {
					if i > 0 {
						b.WriteByte(',')
					}
					b.WriteString(s.labels[i])
					b.WriteString(`="`)
					labelEscaper.WriteString(b, s.labels[i+1])
					b.WriteByte('"')
				}
				b.WriteByte('}')
			}
			b.WriteByte(' ')
			b.WriteString(s.value)
			b.WriteByte('\n')
		}
	}
}

// metrics renders st as metric families; haveJob says whether the job
// was planned (before, it has no counters to report, not even zeros).
func metrics(st Status, haveJob bool) []*family {
	newFam := func(name, typ, help string) *family { return &family{name: name, typ: typ, help: help} }
	var (
		info      = newFam("weir_job_info", "gauge", "The job's name, as a label; always 1.")
		up        = newFam("weir_job_up", "gauge", "1 while the job runs, else 0.")
		state     = newFam("weir_job_state", "gauge", "1 for the job's current state (starting, running, finished, failed, cancelled), 0 for the others.")
		startT    = newFam("weir_job_start_time_seconds", "gauge", "When the job started, in seconds since the Unix epoch.")
		uptime    = newFam("weir_job_uptime_seconds", "gauge", "Seconds since the job started, or until it ended.")
		epochs    = newFam("weir_epochs_completed_total", "counter", "Epochs this run recorded and committed.")
		cpEpoch   = newFam("weir_latest_checkpoint_epoch", "gauge", "Epoch of the last completed checkpoint.")
		cpTime    = newFam("weir_latest_checkpoint_time_seconds", "gauge", "When the last completed checkpoint was recorded, in seconds since the Unix epoch.")
		wm        = newFam("weir_watermark_milliseconds", "gauge", "The job's watermark (minimum over its tasks), in milliseconds since the Unix epoch; -Inf before progress, +Inf once every stream ended.")
		srcIn     = newFam("weir_source_records_in_total", "counter", "Records the job's sources read.")
		batchesIn = newFam("weir_task_batches_in_total", "counter", "Batches a subtask read, from its source or its input queues.")
		rowsIn    = newFam("weir_task_rows_in_total", "counter", "Rows a subtask read, from its source or its input queues.")
		batchesOu = newFam("weir_task_batches_out_total", "counter", "Batches a subtask's last node passed on, to its sink or downstream.")
		rowsOut   = newFam("weir_task_rows_out_total", "counter", "Rows a subtask's last node passed on, to its sink or downstream.")
		taskWM    = newFam("weir_task_watermark_milliseconds", "gauge", "The last watermark a subtask passed on, in milliseconds since the Unix epoch; -Inf before progress, +Inf at the end of its streams.")
		queued    = newFam("weir_task_queued", "gauge", "Messages waiting in a subtask's input queues.")
		maxQueued = newFam("weir_task_max_queued", "gauge", "The most messages that waited in a subtask's input queues at once.")
		lastEpoch = newFam("weir_task_last_epoch", "gauge", "The last epoch a subtask acknowledged.")
		stBytes   = newFam("weir_state_bytes", "gauge", "Approximate memory a stateful operator subtask holds, in bytes.")
		stKeys    = newFam("weir_state_keys", "gauge", "Keys (groups) a stateful operator subtask holds.")
		lag       = newFam("weir_source_lag_records", "gauge", "Records available to a source that the job has not committed yet.")
		skipped   = newFam("weir_source_records_skipped_total", "counter", "Records a source's format rejected and its error policy skip dropped.")
		deadLet   = newFam("weir_source_records_dead_lettered_total", "counter", "Records a source's format rejected and its error policy dlq wrote to the dead-letter destination.")
		lateRows  = newFam("weir_operator_late_rows_total", "counter", "Rows an operator subtask (event-time window or join) dropped because they came behind the watermark, those sent to a late-data side output included.")
	)
	info.addInt(1, "job_name", st.Job)
	if st.State == Running {
		up.addInt(1)
	} else {
		up.addInt(0)
	}
	for _, s := range states {
		v := int64(0)
		if s == st.State {
			v = 1
		}
		state.addInt(v, "state", string(s))
	}
	startT.add(formatFloat(float64(st.StartTime.UnixNano()) / 1e9))
	uptime.add(formatFloat(st.UptimeSeconds))
	if haveJob {
		epochs.addInt(st.EpochsCompleted)
		srcIn.addInt(st.SourceRecordsIn)
		wm.add(watermarkValue(st.Watermark, st.WatermarkMillis))
	}
	if cp := st.LatestCheckpoint; cp != nil {
		cpEpoch.add(strconv.FormatUint(cp.Epoch, 10))
		if cp.Time != nil {
			cpTime.add(formatFloat(float64(cp.Time.UnixNano()) / 1e9))
		}
	}
	for _, t := range st.Tasks {
		for _, s := range t.Subtasks {
			l := []string{"task", t.Task, "subtask", strconv.Itoa(s.Subtask)}
			batchesIn.addInt(s.BatchesIn, l...)
			rowsIn.addInt(s.RowsIn, l...)
			batchesOu.addInt(s.BatchesOut, l...)
			rowsOut.addInt(s.RowsOut, l...)
			taskWM.add(watermarkValue(s.Watermark, s.WatermarkMillis), l...)
			queued.addInt(int64(s.Queued), l...)
			maxQueued.addInt(int64(s.MaxQueued), l...)
			lastEpoch.add(strconv.FormatUint(s.LastEpoch, 10), l...)
		}
	}
	for _, u := range st.StateUsage {
		l := []string{"operator", u.Operator, "subtask", strconv.Itoa(u.Subtask)}
		stBytes.addInt(u.Bytes, l...)
		stKeys.addInt(u.Keys, l...)
	}
	for _, sl := range st.SourceLag {
		if sl.Records != nil {
			lag.addInt(*sl.Records, "source", sl.Source)
		}
	}
	for _, r := range st.SourceRejected {
		skipped.addInt(r.Skipped, "source", r.Source)
		deadLet.addInt(r.DeadLettered, "source", r.Source)
	}
	for _, l := range st.LateRows {
		lateRows.addInt(l.Rows, "operator", l.Operator, "subtask", strconv.Itoa(l.Subtask))
	}
	return []*family{info, up, state, startT, uptime, epochs, cpEpoch, cpTime, wm, srcIn,
		batchesIn, rowsIn, batchesOu, rowsOut, taskWM, queued, maxQueued, lastEpoch, stBytes, stKeys, lag, skipped, deadLet, lateRows}
}
