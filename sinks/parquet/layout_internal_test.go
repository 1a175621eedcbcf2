package parquet

import (
	"math/rand/v2"
	"net/url"
	"testing"
)

// Folder names must be what Hive and Spark write for the same values.
func TestEscapePathNameLikeHive(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"eu", "eu"},
		{"us/east", "us%2Feast"},
		{"a=b", "a%3Db"},
		{"100%", "100%25"},
		{"12:30", "12%3A30"},
		{`"#'*?\{[]^`, "%22%23%27%2A%3F%5C%7B%5B%5D%5E"},
		{"tab\there", "tab%09here"},
		{"\x00\x1f\x7f", "%00%1F%7F"},
		{"with space+plus,comma;semi(paren)<>|~!@$&", "with space+plus,comma;semi(paren)<>|~!@$&"},
		{"é日本", "é日本"},
		{"", ""},
	} {
		if got := escapePathName(c.in); got != c.want {
			t.Errorf("escapePathName(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := unescapePathName(c.want); got != c.in {
			t.Errorf("unescapePathName(%q) = %q, want %q", c.want, got, c.in)
		}
	}
	// Hive leaves a "%" that starts no escape as it is.
	for in, want := range map[string]string{"50%": "50%", "%zz": "%zz", "%4": "%4", "%41%": "A%"} {
		if got := unescapePathName(in); got != want {
			t.Errorf("unescapePathName(%q) = %q, want %q", in, got, want)
		}
	}
}

// Escaping round-trips every byte string, and an independent decoder of
// %XX escapes (net/url) reads the folder names back too.
func TestEscapeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		s := string(b)
		esc := escapePathName(s)
		if got := unescapePathName(esc); got != s {
			t.Fatalf("round trip of %q via %q gave %q", s, esc, got)
		}
		if got, err := url.PathUnescape(esc); err != nil || got != s {
			t.Fatalf("url.PathUnescape(%q) = %q, %v; want %q", esc, got, err, s)
		}
		for i := 0; i < len(esc); i++ {
			if esc[i] == '/' || esc[i] == '=' || esc[i] < 0x20 {
				t.Fatalf("escaped %q contains %q", esc, esc[i])
			}
		}
	}
}

func TestPartitionSegment(t *testing.T) {
	for _, c := range []struct {
		col, value string
		null       bool
		want       string
	}{
		{"region", "eu", false, "region=eu"},
		{"region", "", false, "region=__HIVE_DEFAULT_PARTITION__"},
		{"region", "", true, "region=__HIVE_DEFAULT_PARTITION__"},
		{"a=b", "c/d", false, "a%3Db=c%2Fd"},
	} {
		got := partitionSegment(c.col, c.value, c.null)
		if got != c.want {
			t.Errorf("partitionSegment(%q, %q, %v) = %q, want %q", c.col, c.value, c.null, got, c.want)
		}
		col, v, null, ok := parsePartitionSegment(got)
		if !ok || col != c.col || null != (c.null || c.value == "") || !null && v != c.value {
			t.Errorf("parsePartitionSegment(%q) = %q, %q, %v, %v", got, col, v, null, ok)
		}
	}
}

func TestDataFileNames(t *testing.T) {
	for _, job := range []string{"orders", "orders-v2", "a/b", ".", "..", "x-00000000000000000001-00001"} {
		name := dataFileName(job, 42, 3, 7)
		if epoch, ok := parseDataFileName(name, job); !ok || epoch != 42 {
			t.Errorf("parseDataFileName(%q, %q) = %d, %v", name, job, epoch, ok)
		}
		if e := escapeJob(job); e == "." || e == ".." || e[0] == '.' {
			t.Errorf("escapeJob(%q) = %q", job, escapeJob(job))
		}
	}
	if got := dataFileName("orders", 42, 3, 7); got != "part-orders-00000000000000000042-00003-00007.parquet" {
		t.Errorf("dataFileName = %q", got)
	}
	// Another job's files, and other names, are not the job's.
	for _, c := range []struct{ name, job string }{
		{dataFileName("orders-v2", 1, 0, 0), "orders"},
		{dataFileName("orders", 1, 0, 0), "orders-v2"},
		{dataFileName("orders", 1, 0, 0), "v2"},
		{"part-orders-42-00000-00000.parquet", "orders"},
		{"part-orders-00000000000000000042-00000-00000.parquet.crc", "orders"},
		{"part-orders-00000000000000000042-x-00000.parquet", "orders"},
		{"orders-00000000000000000042-00000-00000.parquet", "orders"},
	} {
		if _, ok := parseDataFileName(c.name, c.job); ok {
			t.Errorf("parseDataFileName(%q, %q) accepted it", c.name, c.job)
		}
	}
	if e, ok := parseEpochName("00000000000000000042.json"); !ok || e != 42 {
		t.Errorf("parseEpochName = %d, %v", e, ok)
	}
	for _, bad := range []string{"42.json", ".00000000000000000042.json.tmp-1", "00000000000000000042.json.tmp"} {
		if _, ok := parseEpochName(bad); ok {
			t.Errorf("parseEpochName(%q) accepted it", bad)
		}
	}
}
