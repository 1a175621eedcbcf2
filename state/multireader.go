package state

import (
	"errors"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
)

// MultiReader presents several snapshots as one: Tables is the union of
// their tables and Read reads a table from each snapshot that has it, in
// the order the readers were given. It is how a subtask restored with
// another parallelism sees the state of every old subtask whose key groups
// overlap its own. Closing it closes every reader.
func MultiReader(readers ...SnapshotReader) SnapshotReader {
	if len(readers) == 1 {
		return readers[0]
	}
	return multiReader(readers)
}

type multiReader []SnapshotReader

func (m multiReader) Tables() []string {
	var out []string
	for _, r := range m {
		for _, t := range r.Tables() {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

func (m multiReader) Read(table string, fn func(rec arrow.RecordBatch) error) error {
	for _, r := range m {
		if !slices.Contains(r.Tables(), table) {
			continue
		}
		if err := r.Read(table, fn); err != nil {
			return err
		}
	}
	return nil
}

func (m multiReader) Close() error {
	var errs []error
	for _, r := range m {
		errs = append(errs, r.Close())
	}
	return errors.Join(errs...)
}
