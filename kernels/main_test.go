package kernels

import (
	"testing"

	"go.uber.org/goleak"
)

// Kernels start no goroutines; goleak keeps it that way.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
