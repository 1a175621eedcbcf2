package kernels

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkMoreKernels measures the numeric, string and time functions of
// expr_math, expr_string_more and expr_time_more over a 64Ki-row batch
// (fixed seed, 5% NULLs), as BenchmarkStringTimeKernels does.
func BenchmarkMoreKernels(b *testing.B) {
	const n = 1 << 16
	rng := rand.New(rand.NewPCG(43, 43))
	// Nexmark's extra column: random letters, a few hundred bytes.
	extra := func(rng *rand.Rand) any {
		var sb strings.Builder
		for k := 100 + rng.IntN(100); k > 0; k-- {
			sb.WriteByte(byte('a' + rng.IntN(26)))
		}
		return sb.String()
	}
	cols := []strCol{
		{"extra", arrow.BinaryTypes.String, extra},
		{"price", arrow.PrimitiveTypes.Float64, func(rng *rand.Rand) any { return float64(rng.IntN(1e7)) * 0.908 }},
		{"i", arrow.PrimitiveTypes.Int64, strIntGen(-1e9, 1e9)},
		{"ts", &arrow.TimestampType{Unit: arrow.Millisecond}, timeRandTicks(arrow.Millisecond)},
		{"ts2", &arrow.TimestampType{Unit: arrow.Millisecond}, timeRandTicks(arrow.Millisecond)},
		{"text", arrow.BinaryTypes.String, func(rng *rand.Rand) any { return "2024-06-02 15:04:0" + string(byte('0'+rng.IntN(10))) }},
		{"k", arrow.PrimitiveTypes.Int32, strIntGen(-100, 100)},
	}
	rec, _ := strBuildBatch(b, memory.NewGoAllocator(), rng, cols, n, 0.05)
	defer rec.Release()
	for _, bc := range []struct {
		name string
		e    Expr
	}{
		{"count_char=ascii", Call("count_char", Col("extra"), Lit("c"))},
		{"count_char=utf8", Call("count_char", Col("extra"), Lit("é"))},
		{"round=2", Call("round", Col("price"), Lit(2))},
		{"abs", Call("abs", Col("i"))},
		{"power", Call("power", Col("price"), Lit(0.5))},
		{"replace", Call("replace", Col("extra"), Lit("ab"), Lit("X"))},
		{"trim", Call("trim", Col("extra"), Lit("abc"))},
		{"lpad", Call("lpad", Col("text"), Lit(24), Lit("*"))},
		{"position", Call("position", Lit("xyz"), Col("extra"))},
		{"to_timestamp", Call("to_timestamp", Col("text"), Lit("yyyy-MM-dd HH:mm:ss"))},
		{"unix_timestamp", Call("unix_timestamp", Col("text"))},
		{"from_unixtime", Call("from_unixtime", Col("i"))},
		{"timestampadd=MONTH", Call("timestampadd", Lit("MONTH"), Col("k"), Col("ts"))},
		{"timestampdiff=DAY", Call("timestampdiff", Lit("DAY"), Col("ts"), Col("ts2"))},
		{"timestampdiff=MONTH", Call("timestampdiff", Lit("MONTH"), Col("ts"), Col("ts2"))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			prog, err := Compile(bc.e, rec.Schema())
			if err != nil {
				b.Fatal(err)
			}
			if _, err := prog.run(rec, nil); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := prog.run(rec, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)*n/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
