package hostlist

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/phalanx-hpc/phalanx/cluster"
)

func TestExpand(t *testing.T) {
	tests := []struct {
		expr string
		want string // names joined by spaces
	}{
		{"", ""},
		{"gpu01", "gpu01"},
		{"gpu[001-003,100]", "gpu001 gpu002 gpu003 gpu100"},
		{"a1,b[1-2]", "a1 b1 b2"},
		{"r[1-2]n[01-03]", "r1n01 r1n02 r1n03 r2n01 r2n02 r2n03"},
		{"gpu[8-11]", "gpu8 gpu9 gpu10 gpu11"},
		{"gpu[08-11]", "gpu08 gpu09 gpu10 gpu11"},
		{"gpu[098-101]", "gpu098 gpu099 gpu100 gpu101"},
		{"n[1-2]-ib", "n1-ib n2-ib"},
		{"a, b  c", "a b c"},
		{"x[3,1]", "x3 x1"},
		{"x[1,1]", "x1 x1"},
		{"[1-2]", "1 2"},
		{"a,", "a"},
	}
	for _, tt := range tests {
		got, err := Expand(tt.expr)
		if err != nil {
			t.Errorf("Expand(%q): %v", tt.expr, err)
			continue
		}
		if s := strings.Join(got, " "); s != tt.want {
			t.Errorf("Expand(%q) = %q, want %q", tt.expr, s, tt.want)
		}
	}
}

func TestExpandErrors(t *testing.T) {
	tests := []struct{ expr, msg string }{
		{"gpu[1-3", "unclosed"},
		{"gpu1-3]", "without '['"},
		{"gpu[[1-3]]", "nested"},
		{"gpu[3-1]", "reversed"},
		{"gpu[]", "empty brackets"},
		{"gpu[a-b]", "not a number"},
		{"gpu[1-]", "empty number"},
		{"gpu[,1]", "empty number"},
		{"gpu[0-1000000]", "more than"},
		{"r[1-1000]n[1-1001]", "more than"},
		{"gpu[1-99999999999999999999]", "too large"},
	}
	for _, tt := range tests {
		_, err := Expand(tt.expr)
		if err == nil {
			t.Errorf("Expand(%q): no error", tt.expr)
			continue
		}
		if !errors.Is(err, cluster.ErrInvalid) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Expand(%q) = %v, want ErrInvalid mentioning %q", tt.expr, err, tt.msg)
		}
	}
}

func TestExpandLimit(t *testing.T) {
	names, err := Expand("n[1-999999],m")
	if err != nil || len(names) != MaxHosts {
		t.Fatalf("expand to exactly MaxHosts: %d names, %v", len(names), err)
	}
	if _, err := Expand("n[1-999999],m,o"); err == nil {
		t.Fatal("MaxHosts+1 names: no error")
	}
}

// TestExpandBytes is the regression test for an expansion that multiplied
// a long name by a large range: 2 KB of text became 2 GB of names.
func TestExpandBytes(t *testing.T) {
	for _, expr := range []string{
		strings.Repeat("x", 2000) + "[1-999999]",
		"n[" + strings.Repeat("0", 100) + "1-999999]", // wide padding
		"a[1-1000]" + strings.Repeat("y", 40) + "[1-1000]",
		strings.Repeat("x", 300) + "[1-999999],m",
	} {
		names, err := Expand(expr)
		if err == nil || names != nil || !errors.Is(err, cluster.ErrInvalid) || !strings.Contains(err.Error(), "MiB of names") {
			t.Errorf("Expand(%.40q...) = %d names, %v; want ErrInvalid about MiB of names", expr, len(names), err)
		}
	}
	names, err := Expand("gpu[000001-999999]") // 9 MB: within the limit
	if err != nil || len(names) != 999999 {
		t.Fatalf("Expand(gpu[000001-999999]) = %d names, %v", len(names), err)
	}
}

// TestExpandLargestNumber is the regression test for a range ending at
// the largest uint64, which never ended: the counter wrapped to zero.
func TestExpandLargestNumber(t *testing.T) {
	done := make(chan []string, 1)
	go func() {
		names, _ := Expand("n[18446744073709551614-18446744073709551615]")
		done <- names
	}()
	select {
	case names := <-done:
		if want := []string{"n18446744073709551614", "n18446744073709551615"}; !reflect.DeepEqual(names, want) {
			t.Fatalf("Expand = %q, want %q", names, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Expand of a range ending at the largest uint64 did not return")
	}
}

func TestCompress(t *testing.T) {
	tests := []struct {
		names string
		want  string
	}{
		{"", ""},
		{"gpu1", "gpu1"},
		{"gpu001 gpu002 gpu003 gpu005", "gpu[001-003,005]"},
		{"gpu005 gpu001 gpu003 gpu002 gpu001", "gpu[001-003,005]"},
		{"gpu9 gpu10 gpu11", "gpu[9-11]"},
		{"gpu099 gpu100", "gpu[099-100]"},
		{"gpu1 gpu01 gpu2", "gpu[01,1-2]"},
		{"b1 a1 a2 login", "a[1-2],b1,login"},
		{"n1-ib n2-ib n1", "n1,n[1-2]-ib"},
		{"r1n01 r1n02 r2n01", "r1n[01-02],r2n01"},
		{"gpu gpu1 gpu2", "gpu,gpu[1-2]"},
	}
	for _, tt := range tests {
		got := Compress(strings.Fields(tt.names))
		if got != tt.want {
			t.Errorf("Compress(%q) = %q, want %q", tt.names, got, tt.want)
		}
	}
}

func TestSort(t *testing.T) {
	got := Sort([]string{"gpu10", "gpu9", "a", "gpu9", "gpu010"})
	want := []string{"a", "gpu9", "gpu010", "gpu10"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Sort = %q, want %q", got, want)
	}
}

// hostName draws names that look like cluster hosts, with shared prefixes,
// padding and suffixes so that ranges form and collide.
func hostName() *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		prefix := rapid.SampledFrom([]string{"gpu", "n", "r1n", "a-", "x"}).Draw(t, "prefix")
		if rapid.IntRange(0, 9).Draw(t, "nonum") == 0 {
			return prefix
		}
		n := rapid.IntRange(0, 120).Draw(t, "num")
		width := rapid.IntRange(0, 4).Draw(t, "width")
		suffix := rapid.SampledFrom([]string{"", "", "-ib", "b"}).Draw(t, "suffix")
		return prefix + pad(uint64(n), width) + suffix
	})
}

func TestCompressRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		names := rapid.SliceOf(hostName()).Draw(t, "names")
		expr := Compress(names)
		got, err := Expand(expr)
		if err != nil {
			t.Fatalf("Expand(Compress(%q)) = %q: %v", names, expr, err)
		}
		want := Sort(names)
		if len(got) == 0 && len(want) == 0 {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Expand(%q) = %q, want %q", expr, got, want)
		}
	})
}

// CompressInOrder keeps the order and the duplicates: expanding its
// expression gives the names back as they were.
func TestCompressInOrderRoundTrip(t *testing.T) {
	if got := CompressInOrder([]string{"gpu003", "gpu001", "gpu002", "cpu7", "gpu004"}); got != "gpu[003,001-002],cpu7,gpu004" {
		t.Errorf("CompressInOrder = %q", got)
	}
	rapid.Check(t, func(t *rapid.T) {
		names := rapid.SliceOf(hostName()).Draw(t, "names")
		expr := CompressInOrder(names)
		got, err := Expand(expr)
		if err != nil {
			t.Fatalf("Expand(CompressInOrder(%q)) = %q: %v", names, expr, err)
		}
		if len(got) == 0 && len(names) == 0 {
			return
		}
		if !reflect.DeepEqual(got, names) {
			t.Fatalf("Expand(%q) = %q, want %q", expr, got, names)
		}
	})
}

func TestSortIsSetLike(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		names := rapid.SliceOf(hostName()).Draw(t, "names")
		sorted := Sort(names)
		seen := map[string]bool{}
		for _, n := range sorted {
			if seen[n] {
				t.Fatalf("duplicate %q in %q", n, sorted)
			}
			seen[n] = true
		}
		for _, n := range names {
			if !seen[n] {
				t.Fatalf("%q lost from %q", n, sorted)
			}
		}
	})
}

// FuzzExpand checks that Expand never returns names and an error together,
// keeps within MaxHosts, refuses malformed input with ErrInvalid, and that
// what it returns survives Compress: Expand(Compress(names)) is
// Sort(names), and compressing again gives the same expression.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{
		"gpu[001-064,100]", "a1,b[1-2]", "r[1-2]n[01-03]", "x[", "]", "n[1-999999999]",
		"gpu[08-11]", "n[1-2]-ib", "a, b  c", "x[3,1]", "gpu1,gpu01,gpu2", "[1-2]", "a0,a00",
		"r[1-1000]n[1-1001]", "gpu[1-99999999999999999999]", "n[0000000000000000000001-2]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		names, err := Expand(expr)
		if err != nil {
			if names != nil || !errors.Is(err, cluster.ErrInvalid) {
				t.Fatalf("Expand(%q) = %q, %v: want no names and an ErrInvalid error", expr, names, err)
			}
			return
		}
		if len(names) > MaxHosts {
			t.Fatalf("Expand(%q): %d names, more than MaxHosts", expr, len(names))
		}
		if len(names) > 10000 {
			return // round trips of huge lists only slow the fuzzer down
		}
		c := Compress(names)
		back, err := Expand(c)
		if err != nil {
			t.Fatalf("Expand(Compress(Expand(%q))) = Expand(%q): %v", expr, c, err)
		}
		if want := Sort(names); len(want) > 0 && !reflect.DeepEqual(back, want) {
			t.Fatalf("Expand(%q) = %q, compressed %q, expanded again %q; want %q", expr, names, c, back, want)
		}
		if again := Compress(back); again != c {
			t.Fatalf("Compress is not stable: %q, then %q", c, again)
		}
	})
}

func TestLess(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"gpu9", "gpu10", true}, {"gpu10", "gpu9", false}, {"gpu1", "gpu1", false},
		{"a", "gpu1", true}, {"gpu010", "gpu10", true},
	} {
		if got := Less(c.a, c.b); got != c.want {
			t.Errorf("Less(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
