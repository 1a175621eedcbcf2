package kernels

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The group-by benchmarks time
//
//	SELECT k, sum(v), count(*) FROM t GROUP BY k
//
// over batches of 64Ki rows prepared before the timer: k uniform in
// [0, keys) (int64; "int64sparse", the same numbers scattered over the
// int64 range by a multiplicative bijection, so that the table cannot
// index them directly; or "string", a string naming the number), v uniform
// in [0, 1e6). BenchmarkGroupBy runs the whole query per op (a fresh GroupBy,
// every batch, Finish), as the DuckDB comparison in bench/duckdb does;
// BenchmarkGroupByUpdate times one Update of a batch whose groups all
// exist, the steady state of a streaming aggregation, which must not
// allocate; BenchmarkGroupByMapBaseline is the naive Go version of the
// query, a map from key to a pointer to its accumulators, row at a time,
// on the same data and with the same sub-benchmark names.

const (
	gbBenchBatch = 1 << 16
	gbBenchRows  = 1 << 22
)

type gbBenchCase struct {
	key   string // "int64" or "string"
	keys  int
	nulls bool
}

func (c gbBenchCase) name() string {
	return fmt.Sprintf("key=%s/keys=%d/nulls=%v", c.key, c.keys, c.nulls)
}

var gbBenchCases = []gbBenchCase{
	{"int64", 1000, false},
	{"int64", 1000, true},
	{"int64", 100_000, false},
	{"int64", 1_000_000, false},
	{"int64sparse", 1000, false},
	{"int64sparse", 1_000_000, false},
	{"string", 1000, false},
	{"string", 100_000, false},
}

type gbBenchData struct {
	schema  *arrow.Schema
	batches []arrow.RecordBatch
	rows    int
	bytes   int64 // input bytes: key and value buffers
}

var gbBenchCache = map[gbBenchCase]*gbBenchData{}

// gbBenchInput generates (once per process) the input of a case, with a
// fixed seed.
func gbBenchInput(c gbBenchCase) *gbBenchData {
	if d, ok := gbBenchCache[c]; ok {
		return d
	}
	mem := memory.NewGoAllocator()
	rng := rand.New(rand.NewPCG(42, uint64(c.keys)))
	keyType := arrow.DataType(arrow.PrimitiveTypes.Int64)
	if c.key == "string" {
		keyType = arrow.BinaryTypes.String
	}
	d := &gbBenchData{
		schema: arrow.NewSchema([]arrow.Field{
			{Name: "k", Type: keyType, Nullable: c.nulls},
			{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: c.nulls},
		}, nil),
		rows: gbBenchRows,
	}
	names := make([]string, c.keys)
	if c.key == "string" {
		for i := range names {
			names[i] = "customer-" + strconv.Itoa(i)
		}
	}
	kb := array.NewBuilder(mem, keyType)
	vb := array.NewInt64Builder(mem)
	for done := 0; done < gbBenchRows; done += gbBenchBatch {
		kb.Reserve(gbBenchBatch)
		vb.Reserve(gbBenchBatch)
		for i := 0; i < gbBenchBatch; i++ {
			k := rng.IntN(c.keys)
			switch b := kb.(type) {
			case *array.Int64Builder:
				switch {
				case c.nulls && rng.IntN(20) == 0:
					b.AppendNull()
				case c.key == "int64sparse":
					b.Append(int64(uint64(k) * 0x9e3779b97f4a7c15))
				default:
					b.Append(int64(k))
				}
				d.bytes += 8
			case *array.StringBuilder:
				b.Append(names[k])
				d.bytes += int64(len(names[k])) + 4
			}
			if c.nulls && rng.IntN(20) == 0 {
				vb.AppendNull()
			} else {
				vb.Append(rng.Int64N(1_000_000))
			}
			d.bytes += 8
		}
		k, v := kb.NewArray(), vb.NewArray()
		d.batches = append(d.batches, array.NewRecordBatch(d.schema, []arrow.Array{k, v}, int64(v.Len())))
		k.Release()
		v.Release()
	}
	kb.Release()
	vb.Release()
	gbBenchCache[c] = d
	return d
}

var gbBenchAggs = []AggregateSpec{
	{Func: AggSum, Args: []int{1}, Name: "s"},
	{Func: AggCountStar, Name: "c"},
}

func gbReportRows(b *testing.B, rowsPerOp int) {
	b.ReportMetric(float64(rowsPerOp)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkGroupBy(b *testing.B) {
	mem := memory.NewGoAllocator()
	for _, c := range gbBenchCases {
		b.Run(c.name(), func(b *testing.B) {
			d := gbBenchInput(c)
			b.SetBytes(d.bytes)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				g, err := NewGroupBy(d.schema, []int{0}, gbBenchAggs)
				if err != nil {
					b.Fatal(err)
				}
				for _, rec := range d.batches {
					if err := g.Update(rec, nil); err != nil {
						b.Fatal(err)
					}
				}
				out, err := g.Finish(mem)
				if err != nil {
					b.Fatal(err)
				}
				out.Release()
			}
			gbReportRows(b, d.rows)
		})
	}
}

func BenchmarkGroupByUpdate(b *testing.B) {
	for _, c := range gbBenchCases {
		b.Run(c.name(), func(b *testing.B) {
			d := gbBenchInput(c)
			g, err := NewGroupBy(d.schema, []int{0}, gbBenchAggs)
			if err != nil {
				b.Fatal(err)
			}
			for _, rec := range d.batches { // every key exists from now on
				if err := g.Update(rec, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(d.bytes / int64(len(d.batches)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := g.Update(d.batches[i%len(d.batches)], nil); err != nil {
					b.Fatal(err)
				}
			}
			gbReportRows(b, gbBenchBatch)
		})
	}
}

func BenchmarkGroupByMapBaseline(b *testing.B) {
	type acc struct{ sum, count int64 }
	for _, c := range gbBenchCases {
		b.Run(c.name(), func(b *testing.B) {
			d := gbBenchInput(c)
			b.SetBytes(d.bytes)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				switch c.key {
				case "int64", "int64sparse":
					groups := map[int64]*acc{}
					var nullGroup *acc
					for _, rec := range d.batches {
						keys, vals := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64)
						for i := 0; i < keys.Len(); i++ {
							var a *acc
							if keys.IsNull(i) {
								if nullGroup == nil {
									nullGroup = &acc{}
								}
								a = nullGroup
							} else if a = groups[keys.Value(i)]; a == nil {
								a = &acc{}
								groups[keys.Value(i)] = a
							}
							if vals.IsValid(i) {
								a.sum += vals.Value(i)
							}
							a.count++
						}
					}
				case "string":
					groups := map[string]*acc{}
					for _, rec := range d.batches {
						keys, vals := rec.Column(0).(*array.String), rec.Column(1).(*array.Int64)
						for i := 0; i < keys.Len(); i++ {
							a := groups[keys.Value(i)]
							if a == nil {
								a = &acc{}
								groups[keys.Value(i)] = a
							}
							a.sum += vals.Value(i)
							a.count++
						}
					}
				}
			}
			gbReportRows(b, d.rows)
		})
	}
}
