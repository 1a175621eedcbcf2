package parquet

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/fsx"
)

// Partition commit triggers (PartitionCommit.Trigger), as Flink names
// them.
const (
	TriggerProcessTime   = "process-time"
	TriggerPartitionTime = "partition-time"
)

// DefaultSuccessFile is Flink's success file name.
const DefaultSuccessFile = "_SUCCESS"

// PartitionCommit configures partition commits, Flink's
// 'sink.partition-commit.*' with the success-file policy: once a
// partition is complete, an empty success file is written into its
// folder, telling downstream readers that they may read it.
//
// A partition is committed after the epoch holding its files is
// committed (the commit log lists them), never before, and only when the
// trigger says it is complete:
//
//   - TriggerProcessTime (the default): processing time has passed the
//     time the partition's first file was started plus Delay;
//   - TriggerPartitionTime: the watermark of a committed epoch (the lowest
//     of the subtasks' at the epoch's pre-commit, see
//     writer.ProcessWatermark) has passed the time extracted from the
//     partition's values plus Delay.
//
// When the input ends (the watermark reaches arrowflow.MaxEventTime)
// every partition is committed. Which partitions are waiting is derived
// from the commit log, so after a crash the next commit writes the
// success files that are due, also of partitions committed before the
// crash. Partitions of a table without PartitionBy are never committed.
type PartitionCommit struct {
	// SuccessFile is the success file's name; empty means no partition
	// commits.
	SuccessFile string
	// Trigger is TriggerProcessTime (default) or TriggerPartitionTime.
	Trigger string
	// Delay is how long after its time a partition is committed.
	Delay time.Duration
	// TimestampPattern builds a partition's time from its values, each
	// $column replaced by the column's value, as Flink's
	// 'partition.time-extractor.timestamp-pattern' ("$dt $hm:00"). The
	// default is the first partition column's value.
	TimestampPattern string
	// TimestampFormatter parses the pattern's result, a Java
	// DateTimeFormatter pattern as Flink's
	// 'partition.time-extractor.timestamp-formatter' (default
	// "yyyy-MM-dd HH:mm:ss", which also takes "yyyy-MM-dd" and fractions
	// of a second).
	TimestampFormatter string
	// Location is the time zone of partition times (Flink's
	// 'sink.partition-commit.watermark-time-zone'); nil is UTC.
	Location *time.Location

	layouts []string // Go layouts of TimestampFormatter
	cols    []string // partition columns in the pattern, longest first
}

func (pc PartitionCommit) enabled() bool { return pc.SuccessFile != "" }

// Check reports what is wrong with pc for a table partitioned by
// partitionBy, as New would.
func (pc PartitionCommit) Check(partitionBy []string) error {
	_, err := pc.validate(partitionBy)
	return err
}

// validate checks pc for a table partitioned by partitionBy and returns
// it with defaults filled in.
func (pc PartitionCommit) validate(partitionBy []string) (PartitionCommit, error) {
	if len(partitionBy) == 0 {
		return pc, errors.New("PartitionCommit needs PartitionBy: a table without partitions has none to commit")
	}
	if strings.ContainsAny(pc.SuccessFile, "/\\") || pc.SuccessFile == "." || pc.SuccessFile == ".." {
		return pc, fmt.Errorf("PartitionCommit.SuccessFile %q is not a file name", pc.SuccessFile)
	}
	switch pc.Trigger {
	case "":
		pc.Trigger = TriggerProcessTime
	case TriggerProcessTime, TriggerPartitionTime:
	default:
		return pc, fmt.Errorf("PartitionCommit.Trigger %q is not %s or %s", pc.Trigger, TriggerProcessTime, TriggerPartitionTime)
	}
	if pc.Delay < 0 {
		return pc, fmt.Errorf("PartitionCommit.Delay %s is negative", pc.Delay)
	}
	if pc.TimestampPattern == "" {
		pc.TimestampPattern = "$" + partitionBy[0]
	}
	if pc.Location == nil {
		pc.Location = time.UTC
	}
	pc.cols = slices.Clone(partitionBy)
	slices.SortStableFunc(pc.cols, func(a, b string) int { return len(b) - len(a) })
	// Every $name must be a partition column.
	rest := pc.TimestampPattern
	for _, c := range pc.cols {
		rest = strings.ReplaceAll(rest, "$"+c, "")
	}
	if i := strings.IndexByte(rest, '$'); i >= 0 {
		return pc, fmt.Errorf("PartitionCommit.TimestampPattern %q: $%s is not a partition column (%s)", pc.TimestampPattern, leadingName(rest[i+1:]), strings.Join(partitionBy, ", "))
	}
	if pc.TimestampFormatter == "" || pc.TimestampFormatter == "yyyy-MM-dd HH:mm:ss" {
		pc.layouts = []string{"2006-01-02 15:04:05.999999999", "2006-01-02"}
	} else {
		l, err := javaLayout(pc.TimestampFormatter)
		if err != nil {
			return pc, fmt.Errorf("PartitionCommit.TimestampFormatter %q: %w", pc.TimestampFormatter, err)
		}
		pc.layouts = []string{l}
	}
	return pc, nil
}

func leadingName(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool {
		return !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	})
	if i < 0 {
		return s
	}
	return s[:i]
}

// partitionTime extracts the time of the partition whose values are
// given by column, as the partition-time trigger does.
func (pc PartitionCommit) partitionTime(values map[string]string) (time.Time, error) {
	s := pc.TimestampPattern
	for _, c := range pc.cols {
		s = strings.ReplaceAll(s, "$"+c, values[c])
	}
	var err error
	for _, l := range pc.layouts {
		var t time.Time
		if t, err = time.ParseInLocation(l, s, pc.Location); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("partition time %q (from %q): %w", s, pc.TimestampPattern, err)
}

// partitionTimeOf extracts the time of the partition in folder dir.
func (pc PartitionCommit) partitionTimeOf(dir string) (time.Time, error) {
	values := map[string]string{}
	for _, seg := range strings.Split(dir, "/") {
		col, v, null, ok := parsePartitionSegment(seg)
		if !ok {
			return time.Time{}, fmt.Errorf("folder %q is not col=value", seg)
		}
		if null {
			return time.Time{}, fmt.Errorf("partition %s: %s is null, which has no time", dir, col)
		}
		values[col] = v
	}
	return pc.partitionTime(values)
}

// javaLayout turns a Java DateTimeFormatter pattern into a Go layout:
// y, M, d, H, h, m, s, S and a, quoted literals and other characters as
// they are.
func javaLayout(p string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(p); {
		c := p[i]
		j := i
		for j < len(p) && p[j] == c {
			j++
		}
		n := j - i
		switch {
		case c == '\'':
			k := strings.IndexByte(p[i+1:], '\'')
			if k < 0 {
				return "", errors.New("unterminated quote")
			}
			b.WriteString(p[i+1 : i+1+k])
			i += k + 2
			continue
		case c == 'y' && n == 4 || c == 'u' && n == 4:
			b.WriteString("2006")
		case c == 'y' && n == 2:
			b.WriteString("06")
		case c == 'M' && n == 2:
			b.WriteString("01")
		case c == 'M' && n == 1:
			b.WriteString("1")
		case c == 'd' && n == 2:
			b.WriteString("02")
		case c == 'd' && n == 1:
			b.WriteString("2")
		case c == 'H' && n == 2:
			b.WriteString("15")
		case c == 'h' && n == 2:
			b.WriteString("03")
		case c == 'h' && n == 1:
			b.WriteString("3")
		case c == 'm' && n == 2:
			b.WriteString("04")
		case c == 'm' && n == 1:
			b.WriteString("4")
		case c == 's' && n == 2:
			b.WriteString("05")
		case c == 's' && n == 1:
			b.WriteString("5")
		case c == 'S' && n <= 9:
			if !strings.HasSuffix(b.String(), ".") && !strings.HasSuffix(b.String(), ",") {
				return "", errors.New("fractions of a second (S) must follow '.' or ','")
			}
			b.WriteString(strings.Repeat("0", n))
		case c == 'a' && n == 1:
			b.WriteString("PM")
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			return "", fmt.Errorf("pattern letters %q are not supported (y, M, d, H, h, m, s, S, a are)", p[i:j])
		default:
			b.WriteString(p[i:j])
		}
		i = j
	}
	return b.String(), nil
}

// jobCommits is what the sink knows about a job's partitions waiting for
// their commit.
type jobCommits struct {
	pending map[string]int64 // partition folder -> creation time (Unix ms)
	wm      *int64           // the highest committed epoch watermark
}

// epochWatermark is the watermark of an epoch: the lowest of its
// subtasks', known when each subtask that sent a payload had one. With
// partition commits every running writer sends a payload, so a subtask
// without one (nil among payloads) has finished: its input ended, and
// its watermark is MaxEventTime.
func epochWatermark(ps []*payload) *int64 {
	if len(ps) == 0 {
		return nil
	}
	wm := int64(math.MaxInt64)
	for _, p := range ps {
		if p.Watermark == nil {
			return nil
		}
		wm = min(wm, *p.Watermark)
	}
	return &wm
}

// loadCommits derives the job's waiting partitions from its commit log:
// every partition holding committed files and no success file.
func (s *Sink) loadCommits(job string) (*jobCommits, error) {
	jc := &jobCommits{pending: map[string]int64{}}
	epochs, err := s.committedEpochs(job)
	if err != nil {
		return nil, err
	}
	for _, e := range epochs {
		data, err := os.ReadFile(s.layout.commitLog(job, e))
		if err != nil {
			return nil, err
		}
		l, err := decodeCommitLog(data)
		if err != nil {
			return nil, fmt.Errorf("epoch %d: %w", e, err)
		}
		if l.Watermark != nil && (jc.wm == nil || *l.Watermark > *jc.wm) {
			jc.wm = l.Watermark
		}
		for _, st := range l.Subtasks {
			for _, f := range st.Files {
				if dir := path.Dir(f.Path); dir != "." {
					if _, ok := jc.pending[dir]; !ok {
						jc.pending[dir] = 0 // written before creation times were recorded
					}
				}
			}
			for _, pe := range st.Partitions {
				mergeCreated(jc.pending, pe)
			}
		}
	}
	for dir := range jc.pending {
		if _, err := os.Lstat(filepath.Join(s.layout.abs(dir), s.opts.PartitionCommit.SuccessFile)); err == nil {
			delete(jc.pending, dir)
		}
	}
	return jc, nil
}

func mergeCreated(pending map[string]int64, pe partitionEntry) {
	if c, ok := pending[pe.Dir]; !ok || c == 0 || pe.Created < c {
		pending[pe.Dir] = pe.Created
	}
}

// commitPartitions runs after the epoch of ps is committed: it adds the
// epoch's partitions to those waiting and writes the success file of
// every waiting partition the trigger lets through (all of them once the
// watermark is MaxEventTime).
func (s *Sink) commitPartitions(job string, ps []*payload, wm *int64) error {
	pc := &s.opts.PartitionCommit
	s.pcMu.Lock()
	defer s.pcMu.Unlock()
	jc := s.commits[job]
	if jc == nil {
		var err error
		if jc, err = s.loadCommits(job); err != nil {
			return fmt.Errorf("partition commit: %w", err)
		}
		if s.commits == nil {
			s.commits = map[string]*jobCommits{}
		}
		s.commits[job] = jc
	}
	for _, p := range ps {
		for _, pe := range p.Partitions {
			mergeCreated(jc.pending, pe)
		}
	}
	if wm != nil && (jc.wm == nil || *wm > *jc.wm) {
		jc.wm = wm
	}
	final := jc.wm != nil && *jc.wm == int64(arrowflow.MaxEventTime)
	now := s.now().UnixMilli()
	fenced := false
	for _, dir := range slices.Sorted(maps.Keys(jc.pending)) {
		ready := final
		if !ready {
			switch pc.Trigger {
			case TriggerProcessTime:
				ready = now >= jc.pending[dir]+pc.Delay.Milliseconds()
			case TriggerPartitionTime:
				if jc.wm != nil {
					if t, err := pc.partitionTimeOf(dir); err == nil {
						ready = *jc.wm > t.Add(pc.Delay).UnixNano()
					}
				}
			}
		}
		if !ready {
			continue
		}
		if !fenced {
			// A job instance whose output was taken over writes no
			// success file either.
			if _, err := s.checkOwner(job); err != nil {
				return err
			}
			fenced = true
		}
		folder := s.layout.abs(dir)
		if _, err := os.Stat(folder); errors.Is(err, fs.ErrNotExist) {
			delete(jc.pending, dir) // removed by someone: nothing to commit
			continue
		}
		if _, err := fsx.CreateOnce(filepath.Join(folder, pc.SuccessFile), nil); err != nil {
			return fmt.Errorf("partition commit of %s: %w", dir, err)
		}
		delete(jc.pending, dir)
	}
	return nil
}

// now is the processing time of process-time commits and rolling.
func (s *Sink) now() time.Time {
	if s.opts.Now != nil {
		return s.opts.Now()
	}
	return time.Now()
}

// The sink's writers take the watermark of their input
// (arrowflow.WatermarkWriter), which partition-time commits and the
// commit of every partition at the end of the input need.
var _ arrowflow.WatermarkWriter = (*writer)(nil)
