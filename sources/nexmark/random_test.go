package nexmark

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// javaProgram prints, for each seed given as an argument, draws of a
// java.util.Random(seed) in a fixed order: the reference's primitives,
// computed by the JDK itself.
const javaProgram = `
import java.util.Random;

public class Draws {
  public static void main(String[] args) {
    StringBuilder sb = new StringBuilder();
    for (String a : args) {
      Random r = new Random(Long.parseLong(a));
      sb.append(r.nextInt());
      int[] bounds = {1, 2, 6, 13, 26, 100, 1 << 20, 10000, (1 << 30) + 1, 2147483647};
      for (int b : bounds) sb.append(' ').append(r.nextInt(b));
      sb.append(' ').append(r.nextLong());
      sb.append(' ').append(Double.doubleToRawLongBits(r.nextDouble()));
      for (int i = 0; i < 4; i++) sb.append(' ').append(Math.round(Math.pow(10.0, r.nextDouble() * 6.0) * 100.0));
      sb.append(' ').append((char) ('a' + r.nextInt() % 26));
      sb.append('\n');
    }
    System.out.print(sb);
  }
}
`

// goDraws is javaProgram's line for seed, from javaRandom.
func goDraws(seed int64) string {
	r := newJavaRandom(seed)
	var sb strings.Builder
	fmt.Fprint(&sb, r.nextInt32())
	for _, b := range []int32{1, 2, 6, 13, 26, 100, 1 << 20, 10000, 1<<30 + 1, math.MaxInt32} {
		fmt.Fprint(&sb, " ", r.nextInt(b))
	}
	fmt.Fprint(&sb, " ", r.nextInt64())
	fmt.Fprint(&sb, " ", int64(math.Float64bits(r.nextDouble())))
	for range 4 {
		fmt.Fprint(&sb, " ", r.nextPrice())
	}
	fmt.Fprintf(&sb, " %c", 'a'+r.nextInt32()%26)
	return sb.String()
}

// TestJavaRandomMatchesJDK runs javaProgram on the JDK, when one is
// installed, and compares its draws with javaRandom's for many seeds
// (event ids, negative channel seeds, mixed seeds).
func TestJavaRandomMatchesJDK(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM")
	}
	java, err := exec.LookPath("java")
	if err != nil {
		t.Skip("no java on PATH")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "Draws.java")
	if err := os.WriteFile(file, []byte(javaProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	var seeds []int64
	for i := range int64(2000) {
		seeds = append(seeds, i, i*1_000_003+7, ^i, i^int64(mix64(uint64(i+1))))
	}
	seeds = append(seeds, math.MinInt64, math.MaxInt64, 1<<47, 1<<48)
	args := []string{file}
	for _, s := range seeds {
		args = append(args, fmt.Sprint(s))
	}
	var stderr bytes.Buffer
	cmd := exec.Command(java, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("java failed (too old for single-file programs?): %v: %s", err, stderr.Bytes())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	n := 0
	for sc.Scan() {
		if n >= len(seeds) {
			t.Fatal("java printed more lines than seeds")
		}
		if got := goDraws(seeds[n]); got != sc.Text() {
			t.Fatalf("seed %d:\n  go %s\njava %s", seeds[n], got, sc.Text())
		}
		n++
	}
	if n != len(seeds) {
		t.Fatalf("java printed %d lines for %d seeds", n, len(seeds))
	}
}

// TestJavaRandomKnownValues pins a few draws of java.util.Random as the
// JDK prints them (TestJavaRandomMatchesJDK checks many more where a JDK
// is installed), so that something is checked where none is.
func TestJavaRandomKnownValues(t *testing.T) {
	r := newJavaRandom(0)
	if v := r.nextInt32(); v != -1155484576 {
		t.Fatalf("new Random(0).nextInt() = %d, want -1155484576", v)
	}
	r = newJavaRandom(42)
	if v := r.nextInt32(); v != -1170105035 {
		t.Fatalf("new Random(42).nextInt() = %d, want -1170105035", v)
	}
	r = newJavaRandom(0)
	if v := r.nextDouble(); v != 0.730967787376657 {
		t.Fatalf("new Random(0).nextDouble() = %v, want 0.730967787376657", v)
	}
}
