package hostgit

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// packObject is one object for buildPack: typ 1-4 with data, or an
// OFS_DELTA (6) on the object ofs objects before it.
type packObject struct {
	typ  int
	data []byte // the object, or the delta's instructions
	back int    // OFS_DELTA: how many objects back its base is (0: 1)
}

// objHeader is a pack object header: type and size.
func objHeader(typ int, size int) []byte {
	b := []byte{byte(typ<<4) | byte(size&15)}
	size >>= 4
	for size > 0 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(size&0x7f))
		size >>= 7
	}
	return b
}

// varint is a delta header size (little-endian base-128).
func varint(n uint64) []byte {
	var b []byte
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func ofsEncode(ofs int64) []byte {
	b := []byte{byte(ofs & 0x7f)}
	for ofs >>= 7; ofs > 0; ofs >>= 7 {
		ofs--
		b = append([]byte{byte(0x80 | ofs&0x7f)}, b...)
	}
	return b
}

// buildPack writes a version 2 pack of objs, declaring count objects
// (len(objs) when count < 0), with its SHA-1 trailer.
func buildPack(t testing.TB, count int, objs []packObject) []byte {
	t.Helper()
	var p bytes.Buffer
	p.WriteString("PACK")
	_ = binary.Write(&p, binary.BigEndian, uint32(2))
	if count < 0 {
		count = len(objs)
	}
	_ = binary.Write(&p, binary.BigEndian, uint32(count))
	var starts []int
	for _, o := range objs {
		starts = append(starts, p.Len())
		p.Write(objHeader(o.typ, len(o.data)))
		if o.typ == objOfsDelta {
			cur, back := len(starts)-1, max(o.back, 1)
			ofs := starts[cur] // before the pack when there is no base
			if cur-back >= 0 {
				ofs -= starts[cur-back]
			}
			p.Write(ofsEncode(int64(ofs)))
		}
		zw := zlib.NewWriter(&p)
		_, _ = zw.Write(o.data)
		_ = zw.Close()
	}
	sum := sha1.Sum(p.Bytes())
	p.Write(sum[:])
	return p.Bytes()
}

// bombDelta is a delta on a 1-byte base declaring a result of result
// bytes: the base size, the result size, and one copy of the base byte.
func bombDelta(result uint64) []byte {
	d := append(varint(1), varint(result)...)
	return append(d, 0x90, 0x01) // copy: offset 0, size 1
}

var testLimits = Limits{MaxObjects: 1000, MaxObjectSize: 1 << 20, MaxInflated: 8 << 20, MaxMemory: 1 << 30, Timeout: 20 * time.Second}

func TestScanPack(t *testing.T) {
	ctx := context.Background()
	blob := packObject{typ: objBlob, data: []byte("a")}
	tests := []struct {
		name string
		pack []byte
		ok   bool
	}{
		{"one blob", buildPack(t, -1, []packObject{blob}), true},
		{"a small delta", buildPack(t, -1, []packObject{blob, {typ: objOfsDelta, data: bombDelta(1000)}}), true},
		{"empty", buildPack(t, -1, nil), true},
		{"delta bomb", buildPack(t, -1, []packObject{blob, {typ: objOfsDelta, data: bombDelta(16 << 30)}}), false},
		{"delta result just over", buildPack(t, -1, []packObject{blob, {typ: objOfsDelta, data: bombDelta(1<<20 + 1)}}), false},
		{"declares 4 billion objects", buildPack(t, 1<<32-1, []packObject{blob}), false},
		{"declares more than it has", buildPack(t, 2, []packObject{blob}), false},
		{"declares fewer", buildPack(t, 1, []packObject{blob, blob}), false},
		{"large blob", buildPack(t, -1, []packObject{{typ: objBlob, data: make([]byte, 2<<20)}}), false},
		{"many deltas over the total", buildPack(t, -1, append([]packObject{blob}, repeat(packObject{typ: objOfsDelta, data: bombDelta(1 << 20)}, 9)...)), false},
		{"bad type", buildPack(t, -1, []packObject{{typ: 5, data: []byte("x")}}), false},
		{"delta base before the pack", buildPack(t, -1, []packObject{{typ: objOfsDelta, data: bombDelta(1)}}), false},
		{"not a pack", []byte("PACX\x00\x00\x00\x02\x00\x00\x00\x00"), false},
		{"version 4", []byte("PACK\x00\x00\x00\x04\x00\x00\x00\x00"), false},
	}
	// An object whose data inflates past its declared size.
	lying := buildPack(t, -1, []packObject{{typ: objBlob, data: []byte("abc")}})
	lying[12] = byte(objBlob<<4) | 1
	tests = append(tests, struct {
		name string
		pack []byte
		ok   bool
	}{"inflates past its size", lying, false})
	trailing := append(buildPack(t, -1, []packObject{blob}), 'x')
	tests = append(tests, struct {
		name string
		pack []byte
		ok   bool
	}{"data after the pack", trailing, false})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := ScanPack(ctx, bytes.NewReader(tt.pack), 20, testLimits)
			if (err == nil) != tt.ok {
				t.Errorf("err = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrPack) {
				t.Errorf("not ErrPack: %v", err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

func repeat(o packObject, n int) []packObject {
	out := make([]packObject, n)
	for i := range out {
		out[i] = o
	}
	return out
}

// TestScanPackMatchesGit: a pack git writes passes.
func TestScanPackMatchesGit(t *testing.T) {
	host, _ := hostAndBox(t)
	for i := 0; i < 20; i++ {
		must(t, os.WriteFile(filepath.Join(host, "f.txt"), []byte(strings.Repeat("line\n", 200)+strings.Repeat("x", i)), 0o644))
		git(t, host, "add", "f.txt")
		git(t, host, "commit", "-q", "-m", "c")
	}
	p := filepath.Join(t.TempDir(), "all.bundle")
	git(t, host, "bundle", "create", "-q", p, "--branches")
	in, err := os.Open(p)
	must(t, err)
	defer in.Close()
	b, err := ReceiveBundle(in, t.TempDir(), 1<<30)
	must(t, err)
	info, err := ScanBundle(context.Background(), b, Limits{})
	if err != nil || info.Objects < 60 || info.Deltas == 0 {
		t.Errorf("%+v %v", info, err)
	}
}

// bombBundle is a bundle whose one branch names fake (a commit the pack
// need not hold: the bomb is refused first) with pack as its pack.
func bombBundle(t *testing.T, pack []byte) (Bundle, Heads) {
	t.Helper()
	oid := strings.Repeat("1", 40)
	p := filepath.Join(t.TempDir(), "bomb.bundle")
	must(t, os.WriteFile(p, append([]byte("# v2 git bundle\n"+oid+" refs/heads/main\n\n"), pack...), 0o600))
	in, err := os.Open(p)
	must(t, err)
	defer in.Close()
	b, err := ReceiveBundle(in, t.TempDir(), 1<<20)
	must(t, err)
	return b, Heads{"refs/heads/main": oid}
}

// TestFetchRefusesBombs: a 16 GiB delta result in a few dozen bytes, a
// pack declaring 4 billion objects, and many deltas each under the object
// limit but over the total: each refused in under 5 s (the scan reads a
// few bytes; nothing is allocated by their declared sizes), with the
// host's refs, work tree and objects as they were.
func TestFetchRefusesBombs(t *testing.T) {
	host, _ := hostAndBox(t)
	r, err := Open(host)
	must(t, err)
	blob := packObject{typ: objBlob, data: []byte("a")}
	bombs := map[string][]byte{
		"delta bomb":   buildPack(t, -1, []packObject{blob, {typ: objOfsDelta, data: bombDelta(16 << 30)}}),
		"object count": buildPack(t, 1<<32-1, []packObject{blob}),
		"many deltas":  buildPack(t, -1, append([]packObject{blob}, repeat(packObject{typ: objOfsDelta, data: bombDelta(400 << 20)}, 12)...)),
	}
	for name, pack := range bombs {
		t.Run(name, func(t *testing.T) {
			b, heads := bombBundle(t, pack)
			before := hostState(t, host)
			start := time.Now()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			alloc := ms.TotalAlloc
			_, err := r.Fetch(context.Background(), b, heads, "web-1", FetchOptions{})
			if !errors.Is(err, ErrBundle) || !errors.Is(err, ErrPack) {
				t.Errorf("err = %v", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("refused after %s", d)
			}
			runtime.ReadMemStats(&ms)
			if a := ms.TotalAlloc - alloc; a > 16<<20 {
				t.Errorf("allocated %d bytes", a)
			}
			if hostState(t, host) != before {
				t.Error("the host changed")
			}
		})
	}
}

// TestIndexPackBounded: the same bombs given straight to git index-pack
// (ScanPack skipped: the second line, for a bomb the scan would miss) die
// in under 5 s on GIT_ALLOC_LIMIT, the address-space cap and
// --max-input-size, and leave nothing in the host's objects.
func TestIndexPackBounded(t *testing.T) {
	host, _ := hostAndBox(t)
	r, err := Open(host)
	must(t, err)
	blob := packObject{typ: objBlob, data: []byte("a")}
	lim := Limits{MaxObjectSize: 1 << 20, MaxMemory: 512 << 20, Timeout: 10 * time.Second}.orDefault()
	for name, pack := range map[string][]byte{
		"delta bomb":   buildPack(t, -1, []packObject{blob, {typ: objOfsDelta, data: bombDelta(16 << 30)}}),
		"object count": buildPack(t, 1<<32-1, []packObject{blob}),
		"large delta":  buildPack(t, -1, []packObject{blob, {typ: objOfsDelta, data: bombDelta(300 << 20)}}),
	} {
		t.Run(name, func(t *testing.T) {
			b, _ := bombBundle(t, pack)
			before := hostState(t, host)
			ctx, cancel := context.WithTimeout(context.Background(), lim.Timeout)
			defer cancel()
			q, err := r.newQuarantine(ctx, lim)
			must(t, err)
			start := time.Now()
			err = q.indexPack(ctx, b, lim, false)
			q.remove()
			if err == nil || ctx.Err() != nil {
				t.Fatalf("err = %v, ctx %v", err, ctx.Err())
			}
			t.Logf("%s: %v", time.Since(start).Round(time.Millisecond), err)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("refused after %s", d)
			}
			if hostState(t, host) != before {
				t.Error("the host changed")
			}
		})
	}
	// The address-space cap alone: GIT_ALLOC_LIMIT lets a 700 MiB delta
	// result through, RLIMIT_AS (256 MiB) does not.
	if childLimited {
		t.Run("address space", func(t *testing.T) {
			lim := Limits{MaxObjectSize: 1 << 30, MaxMemory: 256 << 20, Timeout: 10 * time.Second}.orDefault()
			b, _ := bombBundle(t, buildPack(t, -1, []packObject{blob, {typ: objOfsDelta, data: bombDelta(700 << 20)}}))
			q, err := r.newQuarantine(context.Background(), lim)
			must(t, err)
			defer q.remove()
			start := time.Now()
			err = q.indexPack(context.Background(), b, lim, false)
			if err == nil || !strings.Contains(err.Error(), "Out of memory") {
				t.Errorf("err = %v, want git out of memory", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("refused after %s", d)
			}
		})
	}
	// The input cap: a pack larger than the bundle says.
	b, _ := bombBundle(t, buildPack(t, -1, []packObject{blob}))
	b.Size = b.HeaderLen + 10
	q, err := r.newQuarantine(context.Background(), lim)
	must(t, err)
	defer q.remove()
	if err := q.indexPack(context.Background(), b, lim, false); err == nil || !strings.Contains(err.Error(), "max-input-size") && !strings.Contains(err.Error(), "exceeds maximum") {
		t.Errorf("input cap: %v", err)
	}
}

func FuzzScanPack(f *testing.F) {
	blob := packObject{typ: objBlob, data: []byte("a")}
	f.Add(buildPack(f, -1, []packObject{blob}))
	f.Add(buildPack(f, -1, []packObject{blob, {typ: objOfsDelta, data: bombDelta(100)}}))
	f.Add(buildPack(f, -1, []packObject{blob, {typ: objOfsDelta, data: bombDelta(16 << 30)}}))
	f.Add(buildPack(f, 3, []packObject{{typ: objTree, data: []byte("100644 a\x00" + strings.Repeat("\x01", 20))}}))
	f.Add([]byte("PACK\x00\x00\x00\x02\xff\xff\xff\xff"))
	lim := Limits{MaxObjects: 64, MaxObjectSize: 1 << 16, MaxInflated: 1 << 18}
	f.Fuzz(func(t *testing.T, in []byte) {
		// ScanBundle's input is a header then a pack; scan both halves.
		if b, err := ParseHeader(bytes.NewReader(in)); err == nil && b.HeaderLen <= int64(len(in)) {
			_, _ = ScanPack(context.Background(), bytes.NewReader(in[b.HeaderLen:]), b.hashLen(), lim)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		info, err := ScanPack(context.Background(), bytes.NewReader(in), 20, lim)
		runtime.ReadMemStats(&ms)
		// Bounded: the reader, the inflater and their buffers, whatever
		// the input declares.
		if a := ms.TotalAlloc - before; a > 1<<20 {
			t.Fatalf("allocated %d bytes on %d bytes of input", a, len(in))
		}
		if err == nil && (info.Objects > lim.MaxObjects || info.Inflated > lim.MaxInflated) {
			t.Fatalf("accepted over the limits: %+v", info)
		}
		if err != nil && !errors.Is(err, ErrPack) {
			t.Fatalf("error not ErrPack: %v", err)
		}
	})
}

// TestFetchDeadline: a fetch past Limits.Timeout is refused, refs as they
// were.
func TestFetchDeadline(t *testing.T) {
	host, box := hostAndBox(t)
	git(t, box, "commit", "-q", "--allow-empty", "-m", "new")
	before := hostState(t, host)
	_, err := pullBox(t, host, box, FetchOptions{Limits: Limits{Timeout: time.Nanosecond}})
	if !errors.Is(err, ErrBundle) || !strings.Contains(err.Error(), "longer than 1ns") {
		t.Errorf("err = %v", err)
	}
	if hostState(t, host) != before {
		t.Error("the host changed")
	}
}
