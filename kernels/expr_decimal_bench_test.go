package kernels

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// BenchmarkDecimal evaluates Nexmark q1's and q14's DECIMAL expressions
// (0.908 * price and the filter on it) over 64Ki rows, without
// materialising the result: the kernels must not allocate per batch.
func BenchmarkDecimal(b *testing.B) {
	rate := &LiteralExpr{Value: Decimal{Unscaled: decimal128.FromI64(908), Scale: 3}, Type: &arrow.Decimal128Type{Precision: 4, Scale: 3}}
	eur := Mul(rate, Col("price"))
	exprs := []struct {
		name string
		e    Expr
	}{
		{"q1_mul", eur},
		{"q14_filter", And(Greater(eur, Lit(int32(100))), Less(eur, Lit(int32(800))))},
		{"div", Div(eur, Lit(int32(7)))},
		{"to_decimal_23_2", Cast(eur, &arrow.Decimal128Type{Precision: 23, Scale: 2})},
		{"to_double", Cast(eur, arrow.PrimitiveTypes.Float64)},
	}
	for _, x := range exprs {
		for _, nulls := range []bool{false, true} {
			rec := benchBatch(nulls)
			b.Run(fmt.Sprintf("expr=%s/nulls=%v", x.name, nulls), func(b *testing.B) {
				p, err := Compile(x.e, rec.Schema())
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.SetBytes(rec.NumRows() * 8)
				for b.Loop() {
					if _, err := p.run(rec, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
