package chart_test

import (
	"fmt"

	"github.com/weirflow/weir/bench/chart"
)

func ExampleShort() {
	for _, v := range []float64{0, 950, 1500, 500_000, 1_234_567, 999_999, 2.5e9, 0.25} {
		fmt.Println(chart.Short(v))
	}
	// Output:
	// 0
	// 950
	// 1.5K
	// 500K
	// 1.23M
	// 1M
	// 2.5G
	// 0.25
}
