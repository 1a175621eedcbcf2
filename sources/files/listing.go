package files

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/weirflow/weir/format"
	"github.com/weirflow/weir/sinks/parquet"
)

// weirTableDir is the folder sinks/parquet keeps its commit log in; a
// folder that has it is a weir Parquet table.
const weirTableDir = "_weir"

// fileEntry is one file of a listing: one split.
type fileEntry struct {
	// id is the split id: the path relative to the listed folder,
	// slash-separated (the base name when Path is a file).
	id string
	// path is the file's path on disk.
	path string
	// size is the file's size in bytes when it was listed.
	size int64
	// rows is the row count its commit log records, -1 when the file is
	// not of a weir table.
	rows int64
	// parts holds the file's partition values, one per partition column
	// of the listing.
	parts []partValue
	// prev and next are the ids of the files before and after it in the
	// listing ("" at the ends).
	prev, next string
}

// partValue is a partition column's value for one file, as its folder
// name spells it (unescaped).
type partValue struct {
	value string
	null  bool // Hive's default partition, or an empty value
}

// listing is what Splits found: the files to read, in split order, and
// which declared columns come from their folder names.
type listing struct {
	files []*fileEntry
	byID  map[string]*fileEntry
	// partCols are the indices of the declared columns that are partition
	// columns, in declared order; fileCols are the others, read from the
	// files, in declared order.
	partCols, fileCols []int
	// parsers read the partition columns' values, by partCols index.
	parsers []*partitionParser
	// dec decodes the lines of text formats into the fileCols.
	dec format.Decoder
	// table reports a weir Parquet table, read through its commit log.
	table bool
}

// folderPair is one col=value folder of a file's path.
type folderPair struct {
	col string
	partValue
}

// listed is a file found before partition columns are resolved.
type listed struct {
	fileEntry
	pairs []folderPair
}

// list finds the files under the source's Path and resolves the partition
// columns.
func (s *Source) list(ctx context.Context) (*listing, error) {
	root := filepath.Clean(s.opts.Path)
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("files source: %w", err)
	}
	if !st.Mode().IsRegular() && !st.IsDir() {
		return nil, fmt.Errorf("files source: %s is neither a regular file nor a folder", root)
	}
	var found []listed
	table, err := enclosingTable(root, st.IsDir())
	switch {
	case err != nil:
		return nil, err
	case table != "":
		// Path is a weir table, or a partition folder or file of one:
		// its committed files under Path.
		found, err = s.listTable(table, root, st.IsDir())
	case st.IsDir():
		found, err = s.listFolder(ctx, root)
	default:
		f := listed{fileEntry: fileEntry{id: filepath.Base(root), path: root, size: st.Size(), rows: -1}}
		f.pairs, err = folderPairs(strings.Split(filepath.ToSlash(filepath.Dir(root)), "/"))
		if err != nil {
			err = fmt.Errorf("files source: %s: %w", root, err)
		}
		found = append(found, f)
	}
	if err != nil {
		return nil, err
	}
	slices.SortFunc(found, func(a, b listed) int { return strings.Compare(a.id, b.id) })
	l := &listing{table: table != "", byID: make(map[string]*fileEntry, len(found))}
	if err := s.resolvePartitions(l, found); err != nil {
		return nil, err
	}
	for i := range found {
		f := &found[i].fileEntry
		if _, dup := l.byID[f.id]; dup {
			return nil, fmt.Errorf("files source: %s lists file %s twice", root, f.id)
		}
		if i > 0 {
			f.prev = found[i-1].id
		}
		if i+1 < len(found) {
			f.next = found[i+1].id
		}
		l.files = append(l.files, f)
		l.byID[f.id] = f
	}
	return l, nil
}

// isTable reports whether dir is a table written by sinks/parquet: it has
// a _weir folder.
func isTable(dir string) (bool, error) {
	st, err := os.Stat(filepath.Join(dir, weirTableDir))
	switch {
	case err == nil:
		return st.IsDir(), nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return false, nil
	}
	return false, fmt.Errorf("files source: %w", err)
}

// enclosingTable returns the weir table that path is or lies in, "" when
// none: a partition folder of a table, or one of its files, is read
// through the table's commit log too. The table is path itself when path
// is the table, otherwise its absolute path.
func enclosingTable(path string, isDir bool) (string, error) {
	if isDir {
		if ok, err := isTable(path); err != nil || ok {
			if ok {
				return path, nil
			}
			return "", err
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("files source: %w", err)
	}
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		if ok, err := isTable(dir); err != nil || ok {
			if ok {
				return dir, nil
			}
			return "", err
		}
		if filepath.Dir(dir) == dir {
			return "", nil
		}
	}
}

// listTable lists the committed files of the table written by
// sinks/parquet at table that lie under root (the table itself, one of its
// folders or one of its files). Split ids are relative to root.
func (s *Source) listTable(table, root string, rootIsDir bool) ([]listed, error) {
	committed, err := parquet.CommittedFiles(table)
	if err != nil {
		return nil, fmt.Errorf("files source: %w", err)
	}
	for _, cf := range committed {
		if f := cmp.Or(cf.Format, parquet.FormatParquet); f != s.opts.Format {
			return nil, fmt.Errorf("files source: %s is a table written by weir (it has a %s folder) whose file %s is %s; read it with Format %q, not %q",
				table, weirTableDir, cf.Path, f, f, s.opts.Format)
		}
	}
	absTable, err := filepath.Abs(table)
	if err != nil {
		return nil, fmt.Errorf("files source: %w", err)
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("files source: %w", err)
	}
	within, err := filepath.Rel(absTable, absRoot)
	if err != nil {
		return nil, fmt.Errorf("files source: %w", err)
	}
	within = filepath.ToSlash(within)
	out := make([]listed, 0, len(committed))
	for _, cf := range committed {
		id := cf.Path
		switch {
		case !rootIsDir:
			if cf.Path != within {
				continue
			}
			id = path.Base(cf.Path)
		case within != ".":
			rest, ok := strings.CutPrefix(cf.Path, within+"/")
			if !ok {
				continue
			}
			id = rest
		}
		f, err := committedFile(table, cf)
		if err != nil {
			return nil, err
		}
		f.id = id
		out = append(out, f)
	}
	if !rootIsDir && len(out) == 0 {
		return nil, fmt.Errorf("files source: %s is not a committed file of the weir Parquet table %s; "+
			"its commit log says which files are part of the table", root, table)
	}
	return out, nil
}

// committedFile checks a committed file against its commit log entry.
func committedFile(table string, cf parquet.CommittedFile) (listed, error) {
	p := filepath.Join(table, filepath.FromSlash(cf.Path))
	st, err := os.Stat(p)
	if err != nil {
		return listed{}, fmt.Errorf("files source: table %s: committed file %s: %w", table, cf.Path, err)
	}
	if st.Size() != cf.Bytes {
		return listed{}, fmt.Errorf("files source: table %s: committed file %s has %d bytes, its commit log says %d: it was changed after the commit",
			table, cf.Path, st.Size(), cf.Bytes)
	}
	f := listed{fileEntry: fileEntry{id: cf.Path, path: p, size: st.Size(), rows: cf.Rows}}
	for _, pv := range cf.Partition {
		f.pairs = append(f.pairs, folderPair{col: pv.Column, partValue: partValue{value: pv.Value, null: pv.Null}})
	}
	return f, nil
}

// listFolder walks root for the files to read. A weir table in a
// subfolder is read through its commit log.
func (s *Source) listFolder(ctx context.Context, root string) ([]listed, error) {
	var out []listed
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == root {
			return nil
		}
		if skipName(d.Name()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			ok, err := isTable(p)
			if err != nil || !ok {
				return err
			}
			files, err := s.listTable(p, p, true)
			if err != nil {
				return err
			}
			above, err := folderPairs(strings.Split(rel, "/"))
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			for _, f := range files {
				f.id = rel + "/" + f.id
				if f.pairs, err = mergePairs(above, f.pairs); err != nil {
					return fmt.Errorf("%s: %w", f.id, err)
				}
				out = append(out, f)
			}
			return filepath.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			// A link to a file is read; links to folders are not
			// followed (they could form cycles).
			if info, err = os.Stat(p); err != nil {
				return err
			}
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f := listed{fileEntry: fileEntry{id: rel, path: p, size: info.Size(), rows: -1}}
		if dir := path.Dir(rel); dir != "." {
			if f.pairs, err = folderPairs(strings.Split(dir, "/")); err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
		}
		out = append(out, f)
		return nil
	})
	if err != nil {
		if strings.HasPrefix(err.Error(), "files source: ") {
			return nil, err
		}
		return nil, fmt.Errorf("files source: listing %s: %w", root, err)
	}
	return out, nil
}

// mergePairs joins the partition folders above a nested table with the
// table's own.
func mergePairs(above, own []folderPair) ([]folderPair, error) {
	out := slices.Clone(above)
	for _, p := range own {
		if slices.ContainsFunc(out, func(q folderPair) bool { return q.col == p.col }) {
			return nil, fmt.Errorf("partition column %q is named by two folders", p.col)
		}
		out = append(out, p)
	}
	return out, nil
}

// skipName reports whether a file or folder is left out of a listing, as
// Spark's InMemoryFileIndex leaves it out: hidden names, names starting
// with "_" unless they hold "=" (a partition folder of a column whose
// name starts with "_"), and files being copied by Hadoop (._COPYING_).
func skipName(name string) bool {
	return strings.HasPrefix(name, ".") ||
		strings.HasPrefix(name, "_") && !strings.Contains(name, "=") ||
		strings.HasSuffix(name, "._COPYING_")
}

// hiveNull is the folder value Hive writes for a null partition value.
const hiveNull = "__HIVE_DEFAULT_PARTITION__"

// folderPairs returns the col=value pairs among folder names (others are
// ignored). A column named twice is an error.
func folderPairs(segs []string) ([]folderPair, error) {
	var out []folderPair
	for _, seg := range segs {
		c, v, ok := strings.Cut(seg, "=")
		if !ok || c == "" {
			continue
		}
		p := folderPair{col: unescapePathName(c)}
		switch v {
		case hiveNull, "":
			// "col=" cannot be told from null: Hive and sinks/parquet
			// write both into the default partition.
			p.null = true
		default:
			p.value = unescapePathName(v)
		}
		if slices.ContainsFunc(out, func(q folderPair) bool { return q.col == p.col }) {
			return nil, fmt.Errorf("partition column %q is named by two folders", p.col)
		}
		out = append(out, p)
	}
	return out, nil
}

// unescapePathName reverses Hive's escaping of folder names (%XX with two
// hex digits); a "%" not followed by two hex digits stays, as in Hive.
func unescapePathName(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if hi, lo := unhex(s[i+1]), unhex(s[i+2]); hi >= 0 && lo >= 0 {
				b = append(b, byte(hi<<4|lo))
				i += 2
				continue
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// resolvePartitions decides which declared columns are partition
// columns (Options.PartitionBy, or those named by some file's folders)
// and gives every file its values of them, checked against their types.
func (s *Source) resolvePartitions(l *listing, found []listed) error {
	declared := s.schema
	isPart := make([]bool, declared.NumFields())
	for _, c := range s.opts.PartitionBy {
		isPart[declared.FieldIndices(c)[0]] = true
	}
	if len(s.opts.PartitionBy) == 0 {
		for _, f := range found {
			for _, p := range f.pairs {
				for _, i := range declared.FieldIndices(p.col) {
					isPart[i] = true
				}
			}
		}
	}
	for i, part := range isPart {
		if part {
			l.partCols = append(l.partCols, i)
		} else {
			l.fileCols = append(l.fileCols, i)
		}
	}
	l.parsers = make([]*partitionParser, len(l.partCols))
	for k, c := range l.partCols {
		p, err := newPartitionParser(declared.Field(c))
		if err != nil {
			return fmt.Errorf("files source: %w", err)
		}
		l.parsers[k] = p
	}
	for i := range found {
		f := &found[i]
		f.parts = make([]partValue, len(l.partCols))
		for k, c := range l.partCols {
			name := declared.Field(c).Name
			j := slices.IndexFunc(f.pairs, func(p folderPair) bool { return p.col == name })
			if j < 0 {
				return fmt.Errorf("files source: file %s is not in a %s=... folder, but %s is a partition column (%s); "+
					"every file must lie in a folder of each partition column", f.id, name, name, partitionWhy(s.opts.PartitionBy))
			}
			f.parts[k] = f.pairs[j].partValue
			if err := l.parsers[k].check(f.parts[k]); err != nil {
				return fmt.Errorf("files source: file %s: %w", f.id, err)
			}
		}
	}
	return nil
}

func partitionWhy(explicit []string) string {
	if len(explicit) > 0 {
		return "listed in PartitionBy"
	}
	return "some file's folders name it"
}
