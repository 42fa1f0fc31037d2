package hostgit

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Limits bound what one pull may make the host do. A box controls every
// byte of its bundle, and a pack is a compression format: a few bytes may
// declare gigabytes (an object's size, or the result size a delta
// declares, which git allocates when it applies the delta). ScanPack
// refuses a pack over these limits before git reads it, and the git that
// indexes it runs under limits derived from them (quarantine.go), so
// neither a bomb the scan knows nor one it does not can take the host's
// memory or time.
type Limits struct {
	// MaxObjects caps the objects a pack declares in its header.
	MaxObjects int64
	// MaxObjectSize caps the size of one object as declared: a whole
	// object's, a delta's own, and the result a delta declares.
	MaxObjectSize int64
	// MaxInflated caps the sum of every declared size (objects, deltas and
	// delta results): the work of inflating and hashing the pack.
	MaxInflated int64
	// MaxMemory is the address space of each git child on Linux
	// (RLIMIT_AS); GIT_ALLOC_LIMIT, git's cap on one allocation, is
	// MaxObjectSize plus a margin.
	MaxMemory int64
	// Timeout bounds the whole fetch: scan, index, inspection, refs.
	Timeout time.Duration
}

// DefaultLimits are the limits of `corral pull`. A pull is a box's work
// since the host's branches, usually small; these leave room for a large
// first pull of a clone while keeping a bomb to seconds and a few GiB.
var DefaultLimits = Limits{
	MaxObjects:    1 << 20,
	MaxObjectSize: 512 << 20,
	MaxInflated:   4 << 30,
	MaxMemory:     3 << 30,
	Timeout:       10 * time.Minute,
}

// orDefault fills every unset limit from DefaultLimits.
func (l Limits) orDefault() Limits {
	d := DefaultLimits
	if l.MaxObjects <= 0 {
		l.MaxObjects = d.MaxObjects
	}
	if l.MaxObjectSize <= 0 {
		l.MaxObjectSize = d.MaxObjectSize
	}
	if l.MaxInflated <= 0 {
		l.MaxInflated = d.MaxInflated
	}
	if l.MaxMemory <= 0 {
		l.MaxMemory = d.MaxMemory
	}
	if l.Timeout <= 0 {
		l.Timeout = d.Timeout
	}
	return l
}

// allocLimit is GIT_ALLOC_LIMIT: one object (or delta result) plus room
// for git's own tables (about 100 bytes an object).
func (l Limits) allocLimit() int64 { return l.MaxObjectSize + 128<<20 }

// ErrPack marks a pack refused by ScanPack.
var ErrPack = errors.New("refusing the box's pack")

// PackInfo is what ScanPack counted.
type PackInfo struct {
	Objects  int64 // as the header declares, every one walked
	Deltas   int64
	Inflated int64 // sum of declared sizes, delta results included
}

// pack object types (gitformat-pack).
const (
	objCommit   = 1
	objTree     = 2
	objBlob     = 3
	objTag      = 4
	objOfsDelta = 6
	objRefDelta = 7
)

// countingReader is a byte reader that counts what it gave out. zlib
// reads a flate.Reader (Read and ReadByte) one byte at a time and never
// past the end of its stream, which is what lets ScanPack walk from one
// object to the next without an index.
type countingReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// ScanPack walks a pack stream (gitformat-pack, versions 2 and 3) with
// bounded memory and refuses it, before git reads it, if it is malformed
// or over lim: more objects than MaxObjects, an object or a delta result
// declared larger than MaxObjectSize, declared sizes summing over
// MaxInflated, an object whose data inflates to other than its declared
// size, or bytes after the trailing checksum. hashLen is 20 (SHA-1) or
// 32 (SHA-256). Every size is checked as soon as it is declared, so a
// bomb costs the few bytes that declare it; the inflating this does is
// bounded by MaxInflated. It does not check the checksum or resolve
// deltas: git index-pack does that, under the same limits.
func ScanPack(ctx context.Context, r io.Reader, hashLen int, lim Limits) (PackInfo, error) {
	lim = lim.orDefault()
	var info PackInfo
	cr := &countingReader{r: bufio.NewReaderSize(r, 64<<10)}
	var hdr [12]byte
	if _, err := io.ReadFull(cr, hdr[:]); err != nil {
		return info, fmt.Errorf("%w: no pack header: %w", ErrPack, err)
	}
	if !bytes.Equal(hdr[:4], []byte("PACK")) {
		return info, fmt.Errorf("%w: no pack signature", ErrPack)
	}
	if v := binary.BigEndian.Uint32(hdr[4:8]); v != 2 && v != 3 {
		return info, fmt.Errorf("%w: pack version %d", ErrPack, v)
	}
	count := int64(binary.BigEndian.Uint32(hdr[8:12]))
	if count > lim.MaxObjects {
		return info, fmt.Errorf("%w: it declares %d objects, more than the limit of %d", ErrPack, count, lim.MaxObjects)
	}
	var zr io.ReadCloser
	var base [32]byte
	for i := int64(0); i < count; i++ {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return info, err
			}
		}
		start := cr.n
		typ, size, err := objectHeader(cr, lim.MaxObjectSize)
		if err != nil {
			return info, fmt.Errorf("%w: object %d at offset %d: %w", ErrPack, i, start, err)
		}
		switch typ {
		case objCommit, objTree, objBlob, objTag:
		case objOfsDelta:
			ofs, err := deltaOffset(cr)
			if err != nil || ofs <= 0 || ofs > start-12 {
				return info, fmt.Errorf("%w: object %d at offset %d: bad delta base offset", ErrPack, i, start)
			}
		case objRefDelta:
			if _, err := io.ReadFull(cr, base[:hashLen]); err != nil {
				return info, fmt.Errorf("%w: object %d at offset %d: %w", ErrPack, i, start, err)
			}
		default:
			return info, fmt.Errorf("%w: object %d at offset %d: invalid type %d", ErrPack, i, start, typ)
		}
		if info.Inflated += size; info.Inflated > lim.MaxInflated {
			return info, fmt.Errorf("%w: its objects declare more than %d bytes in all", ErrPack, lim.MaxInflated)
		}
		if zr == nil {
			zr, err = zlib.NewReader(cr)
		} else {
			err = zr.(zlib.Resetter).Reset(cr, nil)
		}
		if err != nil {
			return info, fmt.Errorf("%w: object %d at offset %d: %w", ErrPack, i, start, err)
		}
		var got int64
		if typ == objOfsDelta || typ == objRefDelta {
			info.Deltas++
			// The delta's own header: the base's size, then the result's,
			// which git allocates when it applies the delta.
			var n1, n2 int
			var result int64
			if _, n1, err = deltaSize(zr, lim.MaxObjectSize); err == nil {
				result, n2, err = deltaSize(zr, lim.MaxObjectSize)
			}
			if err != nil {
				return info, fmt.Errorf("%w: delta %d at offset %d: %w", ErrPack, i, start, err)
			}
			if info.Inflated += result; info.Inflated > lim.MaxInflated {
				return info, fmt.Errorf("%w: its objects and deltas declare more than %d bytes in all", ErrPack, lim.MaxInflated)
			}
			got = int64(n1 + n2)
		}
		n, err := io.Copy(io.Discard, io.LimitReader(zr, size-got+1))
		if err != nil {
			return info, fmt.Errorf("%w: object %d at offset %d: %w", ErrPack, i, start, err)
		}
		if got+n != size {
			return info, fmt.Errorf("%w: object %d at offset %d inflates to other than its declared %d bytes", ErrPack, i, start, size)
		}
		info.Objects++
	}
	if _, err := io.ReadFull(cr, base[:hashLen]); err != nil {
		return info, fmt.Errorf("%w: no trailing checksum: %w", ErrPack, err)
	}
	if _, err := cr.ReadByte(); err != io.EOF {
		return info, fmt.Errorf("%w: data after the pack", ErrPack)
	}
	return info, nil
}

// objectHeader reads an object's type and size (a little-endian base-128
// number whose first byte also holds the type), refusing a size over max
// as soon as it is.
func objectHeader(r io.ByteReader, max int64) (typ int, size int64, err error) {
	c, err := r.ReadByte()
	if err != nil {
		return 0, 0, err
	}
	typ = int(c>>4) & 7
	size = int64(c & 15)
	for shift := 4; c&0x80 != 0; shift += 7 {
		if shift > 56 {
			return 0, 0, errors.New("size field too long")
		}
		if c, err = r.ReadByte(); err != nil {
			return 0, 0, err
		}
		size |= int64(c&0x7f) << shift
		if size > max {
			return 0, 0, fmt.Errorf("declared size over the limit of %d bytes", max)
		}
	}
	if size > max {
		return 0, 0, fmt.Errorf("declared size over the limit of %d bytes", max)
	}
	return typ, size, nil
}

// deltaOffset reads an OFS_DELTA's base offset (big-endian base-128 with
// the "+1" of each continuation, as git writes it).
func deltaOffset(r io.ByteReader) (int64, error) {
	c, err := r.ReadByte()
	if err != nil {
		return 0, err
	}
	ofs := int64(c & 0x7f)
	for c&0x80 != 0 {
		if ofs >= 1<<48 {
			return 0, errors.New("offset too long")
		}
		if c, err = r.ReadByte(); err != nil {
			return 0, err
		}
		ofs = (ofs+1)<<7 | int64(c&0x7f)
	}
	return ofs, nil
}

// deltaSize reads one size of a delta's header from its inflated data
// (little-endian base-128), refusing one over max; n is the bytes read.
func deltaSize(r io.Reader, max int64) (size int64, n int, err error) {
	var b [1]byte
	for shift := 0; ; shift += 7 {
		if shift > 56 {
			return 0, n, errors.New("delta size field too long")
		}
		if _, err := io.ReadFull(r, b[:]); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, n, err
		}
		n++
		size |= int64(b[0]&0x7f) << shift
		if size > max {
			return 0, n, fmt.Errorf("declared delta size over the limit of %d bytes", max)
		}
		if b[0]&0x80 == 0 {
			return size, n, nil
		}
	}
}

// hashLen is the object name length of the bundle's object format.
func (b Bundle) hashLen() int {
	if b.ObjectFormat == "sha256" {
		return 32
	}
	return 20
}

// ScanBundle runs ScanPack over the pack that follows b's header.
func ScanBundle(ctx context.Context, b Bundle, lim Limits) (PackInfo, error) {
	f, err := os.Open(b.Path)
	if err != nil {
		return PackInfo{}, err
	}
	defer f.Close()
	if _, err := f.Seek(b.HeaderLen, io.SeekStart); err != nil {
		return PackInfo{}, err
	}
	return ScanPack(ctx, f, b.hashLen(), lim)
}
