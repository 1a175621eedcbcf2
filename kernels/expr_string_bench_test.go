package kernels

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkStringTimeKernels measures the string and time kernels over a
// 64Ki-row batch (fixed seed, 5% NULLs): the evaluation into the node's
// scratch vectors, without materialising an Arrow array.
func BenchmarkStringTimeKernels(b *testing.B) {
	const n = 1 << 16
	rng := rand.New(rand.NewPCG(42, 42))
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "abc", "xyz", "stream", "kernel", "Arrow", "weir"}
	text := func(rng *rand.Rand) any {
		var sb strings.Builder
		for k := 1 + rng.IntN(4); k > 0; k-- {
			sb.WriteString(words[rng.IntN(len(words))])
			sb.WriteByte(' ')
		}
		return sb.String()
	}
	cols := []strCol{
		{"s", arrow.BinaryTypes.String, text},
		{"t", arrow.BinaryTypes.String, text},
		{"ts", &arrow.TimestampType{Unit: arrow.Microsecond}, timeRandTicks(arrow.Microsecond)},
	}
	rec, _ := strBuildBatch(b, memory.NewGoAllocator(), rng, cols, n, 0.05)
	defer rec.Release()
	for _, bc := range []struct {
		name string
		e    Expr
	}{
		{"like=prefix", Call("like", Col("s"), Lit("abc%"))},
		{"like=contains", Call("like", Col("s"), Lit("%kernel%"))},
		{"like=general", Call("like", Col("s"), Lit("%a_p%a %"))},
		{"lower", Call("lower", Col("s"))},
		{"substring", Call("substring", Col("s"), Lit(3), Lit(10))},
		{"concat", Call("concat", Col("s"), Lit("-"), Col("t"))},
		{"date_format", Call("date_format", Col("ts"), Lit("yyyy-MM-dd HH:mm:ss"))},
		{"floor_time=HOUR", Call("floor_time", Col("ts"), Lit("HOUR"))},
		{"extract=HOUR", Call("extract", Lit("HOUR"), Col("ts"))},
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
