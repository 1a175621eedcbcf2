package parquet

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Table layout, below Options.Path:
//
//	col=value/.../part-<job>-<epoch>-<subtask>-<seq>.parquet   committed data
//	                                             (.csv, .json in those formats)
//	col=value/.../_SUCCESS                       a committed partition (PartitionCommit)
//	_weir/staging/<job>/inprogress-<subtask>-<random>/<seq>.parquet-staged
//	                                             files of the open epoch
//	_weir/staging/<job>/<epoch>-<subtask>-<random>/<seq>.parquet-staged
//	                                             pre-committed files
//	_weir/commits/<job>/<epoch>.json             commit log
//
// <job> is the job's name escaped like a partition value (and a leading
// dot escaped too), <epoch> has 20 digits so that names sort by epoch,
// <subtask> and <seq> have at least 5. Hive-style readers skip folders
// whose names start with "_", so they never see _weir.

const (
	weirDir         = "_weir"
	stagingDir      = "staging"
	commitsDir      = "commits"
	inProgress      = "inprogress-"
	hiveNull        = "__HIVE_DEFAULT_PARTITION__"
	dataFilePrefix  = "part-"
	dataFileSuffix  = ".parquet"
	stagedSuffix    = "-staged" // after the format's extension
	commitLogSuffix = ".json"
)

// needsEscape reports whether Hive escapes c in a partition folder name:
// control characters, DEL, and "#%'*/:=?\{[]^ (Hive's
// FileUtils.escapePathName set, also used by Spark).
func needsEscape(c byte) bool {
	if c < 0x20 || c == 0x7f {
		return true
	}
	return strings.IndexByte("\"#%'*/:=?\\{[]^", c) >= 0
}

const hexDigits = "0123456789ABCDEF"

// escapePathName escapes s for use in a folder name the way Hive does:
// each byte that needs it becomes %XX (upper-case hex). Other bytes,
// UTF-8 included, stay.
func escapePathName(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if needsEscape(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if needsEscape(c) {
			b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}

// unescapePathName reverses escapePathName. A "%" not followed by two hex
// digits stays as it is, as in Hive.
func unescapePathName(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b = append(b, byte(v))
				i += 2
				continue
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}

// partitionSegment is the folder name of one partition column's value;
// null is Hive's default partition. An empty string also goes there, as
// in Hive and Spark, since "col=" cannot be told apart from null by
// readers.
func partitionSegment(col, value string, null bool) string {
	if null || value == "" {
		return escapePathName(col) + "=" + hiveNull
	}
	return escapePathName(col) + "=" + escapePathName(value)
}

// parsePartitionSegment splits a folder name col=value into the column
// and value (unescaped); null reports Hive's default partition.
func parsePartitionSegment(seg string) (col, value string, null bool, ok bool) {
	c, v, ok := strings.Cut(seg, "=")
	if !ok || c == "" {
		return "", "", false, false
	}
	if v == hiveNull {
		return unescapePathName(c), "", true, true
	}
	return unescapePathName(c), unescapePathName(v), false, true
}

// escapeJob makes a job's name usable as a folder name and inside file
// names: escaped like a partition value, and a leading dot escaped so
// that "." and ".." stay ordinary names.
func escapeJob(job string) string {
	s := escapePathName(job)
	if strings.HasPrefix(s, ".") {
		s = "%2E" + s[1:]
	}
	return s
}

// epochName is an epoch's 20-digit name: names sort as the numbers do.
func epochName(epoch uint64) string { return fmt.Sprintf("%020d", epoch) }

// dataFileName is the final name of a committed file. It is a function of
// (job, epoch, subtask, seq) only, so committing an epoch again produces
// the same names.
func dataFileName(job string, epoch uint64, subtask, seq int) string {
	return dataFileNameExt(job, epoch, subtask, seq, dataFileSuffix)
}

// dataFileNameExt is dataFileName with the extension of another format.
func dataFileNameExt(job string, epoch uint64, subtask, seq int, ext string) string {
	return fmt.Sprintf("%s%s-%s-%05d-%05d%s", dataFilePrefix, escapeJob(job), epochName(epoch), subtask, seq, ext)
}

// parseDataFileName recognises a final file name of job, in any of the
// formats, and returns its epoch. The job part may contain dashes, so
// the name is parsed from the right.
func parseDataFileName(name, job string) (epoch uint64, ok bool) {
	var rest string
	for _, ext := range formatExtensions {
		if rest, ok = strings.CutSuffix(name, ext); ok {
			break
		}
	}
	if !ok {
		return 0, false
	}
	var parts [3]string // epoch, subtask, seq
	for i := 2; i >= 0; i-- {
		j := strings.LastIndexByte(rest, '-')
		if j < 0 {
			return 0, false
		}
		parts[i], rest = rest[j+1:], rest[:j]
	}
	if rest != dataFilePrefix+escapeJob(job) {
		return 0, false
	}
	if len(parts[0]) != 20 || !allDigits(parts[1]) || !allDigits(parts[2]) {
		return 0, false
	}
	epoch, err := strconv.ParseUint(parts[0], 10, 64)
	return epoch, err == nil
}

// parseEpochName parses a commit log entry's file name.
func parseEpochName(name string) (uint64, bool) {
	s, ok := strings.CutSuffix(name, commitLogSuffix)
	if !ok || len(s) != 20 || !allDigits(s) {
		return 0, false
	}
	e, err := strconv.ParseUint(s, 10, 64)
	return e, err == nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// layout turns the table's relative names into paths.
type layout struct{ root string }

func (l layout) stagingJob(job string) string {
	return filepath.Join(l.root, weirDir, stagingDir, escapeJob(job))
}

func (l layout) commitsJob(job string) string {
	return filepath.Join(l.root, weirDir, commitsDir, escapeJob(job))
}

func (l layout) commitLog(job string, epoch uint64) string {
	return filepath.Join(l.commitsJob(job), epochName(epoch)+commitLogSuffix)
}

// abs turns a slash-separated path relative to the table into a path.
func (l layout) abs(rel string) string { return filepath.Join(l.root, filepath.FromSlash(rel)) }

// rel turns a path below the table into a slash-separated relative one.
func (l layout) rel(path string) (string, error) {
	r, err := filepath.Rel(l.root, path)
	if err != nil {
		return "", err
	}
	return filepath.ToSlash(r), nil
}

// checkRel checks that a relative path from a payload or the commit log
// stays inside the table, so that a damaged payload cannot move or
// delete files elsewhere.
func checkRel(rel string) error {
	if rel == "" || !filepath.IsLocal(filepath.FromSlash(rel)) || strings.Contains(rel, "\\") {
		return fmt.Errorf("path %q is not a relative path inside the table", rel)
	}
	return nil
}
