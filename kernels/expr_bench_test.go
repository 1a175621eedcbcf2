package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// benchBatch is a 64Ki-row batch: a int64 in [0, 1000), b float64 in
// [0, 1000), price int64 cents; with nulls about 10% of each column is null.
func benchBatch(nulls bool) arrow.RecordBatch {
	const n = 1 << 16
	rng := rand.New(rand.NewPCG(1, 2))
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "price", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	ab, bb, pb := array.NewInt64Builder(mem), array.NewFloat64Builder(mem), array.NewInt64Builder(mem)
	for i := 0; i < n; i++ {
		for _, b := range []array.Builder{ab, bb, pb} {
			if nulls && rng.IntN(10) == 0 {
				b.AppendNull()
				continue
			}
			switch b := b.(type) {
			case *array.Int64Builder:
				b.Append(rng.Int64N(1000))
			case *array.Float64Builder:
				b.Append(rng.Float64() * 1000)
			}
		}
	}
	cols := []arrow.Array{ab.NewArray(), bb.NewArray(), pb.NewArray()}
	return array.NewRecordBatch(schema, cols, n)
}

func BenchmarkFilter(b *testing.B) {
	preds := []struct {
		name string
		e    Expr
	}{
		{"a>500", Greater(Col("a"), Lit(500))},
		{"a>10_and_b<500", And(Greater(Col("a"), Lit(10)), Less(Col("b"), Lit(500.0)))},
		{"a_in_5", In(Col("a"), Lit(1), Lit(7), Lit(42), Lit(500), Lit(999))},
	}
	for _, p := range preds {
		for _, nulls := range []bool{false, true} {
			rec := benchBatch(nulls)
			b.Run(fmt.Sprintf("pred=%s/nulls=%v", p.name, nulls), func(b *testing.B) {
				f, err := CompileFilter(p.e, rec.Schema())
				if err != nil {
					b.Fatal(err)
				}
				dst := make([]int32, 0, rec.NumRows())
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if dst, err = f.Select(rec, nil, dst); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(rec.NumRows())*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}

// BenchmarkFilterBaseline is the same first predicate written as a plain
// row-at-a-time loop over Arrow's accessors, the way code without a
// kernel library would.
func BenchmarkFilterBaseline(b *testing.B) {
	for _, nulls := range []bool{false, true} {
		rec := benchBatch(nulls)
		b.Run(fmt.Sprintf("pred=a>500/nulls=%v", nulls), func(b *testing.B) {
			a := rec.Column(0).(*array.Int64)
			dst := make([]int32, 0, rec.NumRows())
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				dst = dst[:0]
				for r := 0; r < a.Len(); r++ {
					if !a.IsNull(r) && a.Value(r) > 500 {
						dst = append(dst, int32(r))
					}
				}
			}
			b.ReportMetric(float64(rec.NumRows())*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

func BenchmarkProject(b *testing.B) {
	exprs := []struct {
		name string
		e    Expr
	}{
		// Nexmark q1: dollar price to euros.
		{"price*0.908", Mul(Col("price"), Lit(0.908))},
		{"a+price", Add(Col("a"), Col("price"))},
		{"case", Case(Greater(Col("a"), Lit(500)), Col("price")).Otherwise(Neg(Col("price")))},
	}
	for _, x := range exprs {
		for _, nulls := range []bool{false, true} {
			for _, useSel := range []bool{false, true} {
				rec := benchBatch(nulls)
				var sel []int32
				if useSel {
					for r := 0; r < int(rec.NumRows()); r += 2 {
						sel = append(sel, int32(r))
					}
				}
				b.Run(fmt.Sprintf("expr=%s/nulls=%v/sel=%v", x.name, nulls, useSel), func(b *testing.B) {
					p, err := CompileProjection([]Expr{x.e}, []string{"out"}, rec.Schema())
					if err != nil {
						b.Fatal(err)
					}
					mem := memory.NewGoAllocator()
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						out, err := p.Project(mem, rec, sel)
						if err != nil {
							b.Fatal(err)
						}
						out.Release()
					}
					rows := rec.NumRows()
					if sel != nil {
						rows = int64(len(sel))
					}
					b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				})
			}
		}
	}
}

// BenchmarkProjectBaseline computes price*0.908 row at a time into an
// Arrow builder.
func BenchmarkProjectBaseline(b *testing.B) {
	for _, nulls := range []bool{false, true} {
		rec := benchBatch(nulls)
		b.Run(fmt.Sprintf("expr=price*0.908/nulls=%v/sel=false", nulls), func(b *testing.B) {
			price := rec.Column(2).(*array.Int64)
			mem := memory.NewGoAllocator()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				bld := array.NewFloat64Builder(mem)
				bld.Reserve(price.Len())
				for r := 0; r < price.Len(); r++ {
					if price.IsNull(r) {
						bld.AppendNull()
					} else {
						bld.UnsafeAppend(float64(price.Value(r)) * 0.908)
					}
				}
				bld.NewArray().Release()
				bld.Release()
			}
			b.ReportMetric(float64(rec.NumRows())*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
