package main

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/parquet"
)

// writeSink writes d through weir's Parquet sink into the table folder
// path as one subtask and one epoch (Open, Write per batch, PreCommit,
// Commit), partitioned by partitionBy. Unlike the plain library runs it
// syncs every file and folder it creates, as the sink always does.
func writeSink(d *dataset, path string, rowGroup int64, partitionBy []string, mem memory.Allocator) error {
	ctx := context.Background()
	s, err := parquet.New(parquet.Options{Path: path, PartitionBy: partitionBy, RowGroupSize: rowGroup})
	if err != nil {
		return err
	}
	w, err := s.Open(&arrowflow.TaskInfo{Job: "bench", Name: "sink", Parallelism: 1, Allocator: mem})
	if err != nil {
		return err
	}
	defer w.Close()
	for _, rec := range d.batches {
		rec.Retain() // the sink takes a reference; the dataset keeps its own
		if err := w.Write(ctx, arrowflow.NewBatch(rec)); err != nil {
			return err
		}
	}
	p, err := w.PreCommit(ctx, 1)
	if err != nil {
		return err
	}
	return s.Commit(ctx, 1, [][]byte{p})
}

// readSink reads the committed rows of the table at path with the sink's
// reader and returns their fingerprint.
func readSink(path string, mem memory.Allocator) (fingerprint, error) {
	var fp fingerprint
	t, err := parquet.ReadCommitted(path, mem)
	if err != nil {
		return fp, err
	}
	for rec, err := range t.Records(context.Background()) {
		if err != nil {
			return fp, err
		}
		if err := sameFields(rec.Schema(), schema); err != nil {
			rec.Release()
			return fp, err
		}
		fp.addRecord(rec)
		rec.Release()
	}
	return fp, nil
}

// tableBytes is the size of the table's committed files.
func tableBytes(path string) (int64, error) {
	files, err := parquet.CommittedFiles(path)
	if err != nil {
		return 0, err
	}
	if len(files) == 0 {
		return 0, fmt.Errorf("no committed files in %s", path)
	}
	var n int64
	for _, f := range files {
		n += f.Bytes
	}
	return n, nil
}
