package main

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// categories are the values of the category column.
var categories = []string{"books", "electronics", "garden", "toys", "grocery", "sports", "music", "clothing", "health", "automotive"}

// startMillis is the ts of row 0: 2026-01-01T00:00:00Z.
var startMillis = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

// schema is the schema of the generated batches. Only price is nullable
// (1% nulls), so that every library writes the same definition levels.
var schema = arrow.NewSchema([]arrow.Field{
	{Name: "key", Type: arrow.PrimitiveTypes.Int64},
	{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "category", Type: arrow.BinaryTypes.String},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
}, nil)

// fingerprint sums what a reader must get back; two readers agree on a
// file when their fingerprints are equal. Sums wrap around.
type fingerprint struct {
	Rows       int64
	KeySum     int64
	PriceCents int64 // sum of round(price*100) over non-null prices
	PriceNulls int64
	CatSum     int64 // sum of (index of category + 1) * (row's key mod 7 + 1)
	TSSum      int64
}

// catIndex maps a category to its index in categories.
var catIndex = func() map[string]int64 {
	m := make(map[string]int64, len(categories))
	for i, c := range categories {
		m[c] = int64(i)
	}
	return m
}()

// add adds one row to f; price is NaN for null.
func (f *fingerprint) add(key int64, price float64, null bool, cat string, ts int64) {
	f.Rows++
	f.KeySum += key
	if null {
		f.PriceNulls++
	} else {
		f.PriceCents += int64(math.Round(price * 100))
	}
	idx, ok := catIndex[cat]
	if !ok {
		idx = -1000 // an unknown category spoils the sum
	}
	f.CatSum += (idx + 1) * (key%7 + 1)
	f.TSSum += ts
}

// addRecord adds every row of rec to f. rec has schema's columns, in any
// order (a parquet-go file orders them by name).
func (f *fingerprint) addRecord(rec arrow.RecordBatch) {
	col := func(name string) arrow.Array { return rec.Column(rec.Schema().FieldIndices(name)[0]) }
	keys := col("key").(*array.Int64)
	prices := col("price").(*array.Float64)
	cats := col("category").(*array.String)
	tss := col("ts").(*array.Timestamp)
	for i := 0; i < int(rec.NumRows()); i++ {
		f.add(keys.Value(i), prices.Value(i), prices.IsNull(i), cats.Value(i), int64(tss.Value(i)))
	}
}

// dataset is the input every library writes.
type dataset struct {
	batches []arrow.RecordBatch
	rows    int64
	bytes   int64 // Arrow buffer bytes of all batches
	want    fingerprint
}

func (d *dataset) release() {
	for _, b := range d.batches {
		b.Release()
	}
	d.batches = nil
}

// generate makes rows rows in batches of at most batch rows: key uniform
// in [0, 1e9), price in [1, 1000) with cents (1% null), category uniform
// over 10 words, ts one millisecond per row. It depends only on its
// arguments.
func generate(mem memory.Allocator, seed uint64, rows int64, batch int) *dataset {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	d := &dataset{rows: rows}
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	kb := b.Field(0).(*array.Int64Builder)
	pb := b.Field(1).(*array.Float64Builder)
	cb := b.Field(2).(*array.StringBuilder)
	tb := b.Field(3).(*array.TimestampBuilder)
	for done := int64(0); done < rows; {
		n := int(min(int64(batch), rows-done))
		for i := range n {
			key := rng.Int64N(1_000_000_000)
			price := float64(100+rng.Int64N(99_900)) / 100
			null := rng.IntN(100) == 0
			cat := categories[rng.IntN(len(categories))]
			ts := startMillis + done + int64(i)
			kb.Append(key)
			if null {
				pb.AppendNull()
			} else {
				pb.Append(price)
			}
			cb.Append(cat)
			tb.Append(arrow.Timestamp(ts))
			d.want.add(key, price, null, cat, ts)
		}
		rec := b.NewRecordBatch()
		for _, c := range rec.Columns() {
			for _, buf := range c.Data().Buffers() {
				if buf != nil {
					d.bytes += int64(buf.Len())
				}
			}
		}
		d.batches = append(d.batches, rec)
		done += int64(n)
	}
	return d
}
