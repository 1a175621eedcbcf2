package main

import (
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// maxValue bounds the generated values: v is uniform in [0, maxValue).
const maxValue = 1_000_000

// schema is the schema of the generated batches: an int64 key k and an
// int64 value v, neither nullable.
var schema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// dataset is the input both engines aggregate: Arrow record batches of the
// schema above, and the totals the generator knows they must produce.
type dataset struct {
	batches []arrow.RecordBatch
	rows    int64
	sum     int64 // sum of v over all rows
}

// release releases the dataset's batches.
func (d *dataset) release() {
	for _, b := range d.batches {
		b.Release()
	}
	d.batches = nil
}

// scatter maps [0, K) one to one onto keys spread over the whole int64
// range (multiplication by an odd constant is a bijection modulo 2^64).
const scatter = 0x9E3779B97F4A7C15

// generate makes rows rows in batches of at most batch rows, with k
// uniform in [0, keys) (scattered over int64 when sparse is set) and v
// uniform in [0, maxValue). The data depends only on seed, keys, rows,
// batch and sparse.
func generate(mem memory.Allocator, seed uint64, keys, rows int64, batch int, sparse bool) *dataset {
	rng := rand.New(rand.NewPCG(seed, uint64(keys)))
	d := &dataset{rows: rows}
	kb := array.NewInt64Builder(mem)
	defer kb.Release()
	vb := array.NewInt64Builder(mem)
	defer vb.Release()
	ks := make([]int64, batch)
	vs := make([]int64, batch)
	for done := int64(0); done < rows; {
		n := int(min(int64(batch), rows-done))
		for i := range n {
			ks[i] = rng.Int64N(keys)
			if sparse {
				ks[i] = int64(uint64(ks[i]) * scatter)
			}
			vs[i] = rng.Int64N(maxValue)
			d.sum += vs[i]
		}
		kb.AppendValues(ks[:n], nil)
		vb.AppendValues(vs[:n], nil)
		k, v := kb.NewArray(), vb.NewArray()
		d.batches = append(d.batches, array.NewRecordBatch(schema, []arrow.Array{k, v}, int64(n)))
		k.Release()
		v.Release()
		done += int64(n)
	}
	return d
}
