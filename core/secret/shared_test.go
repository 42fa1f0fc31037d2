package secret

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slowStore is a Store whose Get blocks until release is closed, like a
// Keychain read while the "allow access" dialog is up, and counts reads.
type slowStore struct {
	Memory
	reads   atomic.Int32
	release chan struct{}
	err     error
}

func (s *slowStore) Get(ctx context.Context, service, account string) (string, error) {
	s.reads.Add(1)
	select {
	case <-s.release:
	case <-ctx.Done():
		return "", Unavailable(service, account, ctx.Err(), "")
	}
	if s.err != nil {
		return "", s.err
	}
	return s.Memory.Get(ctx, service, account)
}

func TestSharedOneReadPerItem(t *testing.T) {
	st := &slowStore{release: make(chan struct{})}
	_ = st.Set(context.Background(), "api", "me", "v")
	sh := NewShared(st)
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Go(func() {
			got[i], _ = sh.Get(context.Background(), "api", "me")
		})
	}
	// Every caller is waiting on the one read.
	for st.reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(st.release)
	wg.Wait()
	if n := st.reads.Load(); n != 1 {
		t.Errorf("%d reads for 8 concurrent gets, want 1", n)
	}
	for i, v := range got {
		if v != "v" {
			t.Errorf("get %d = %q", i, v)
		}
	}
	// Values are not cached: the next Get reads again.
	if v, err := sh.Get(context.Background(), "api", "me"); v != "v" || err != nil || st.reads.Load() != 2 {
		t.Errorf("second get %q %v after %d reads", v, err, st.reads.Load())
	}
}

// A caller whose deadline passes while the dialog is up gets
// ErrUnavailable; the read goes on, and the next caller joins it instead of
// starting a second one.
func TestSharedReadOutlivesTheCaller(t *testing.T) {
	st := &slowStore{release: make(chan struct{})}
	_ = st.Set(context.Background(), "api", "me", "v")
	sh := NewShared(st)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := sh.Get(ctx, "api", "me"); !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first get: %v", err)
	}
	done := make(chan string)
	go func() {
		v, _ := sh.Get(context.Background(), "api", "me")
		done <- v
	}()
	time.Sleep(10 * time.Millisecond)
	close(st.release)
	if v := <-done; v != "v" {
		t.Errorf("joined get = %q", v)
	}
	if n := st.reads.Load(); n != 1 {
		t.Errorf("%d reads, want 1", n)
	}
}

func TestSharedRemembersARefusal(t *testing.T) {
	denied := Unavailable("api", "me", errDenied, "")
	st := &slowStore{release: make(chan struct{}), err: denied}
	close(st.release)
	now := time.Unix(1000, 0)
	sh := &Shared{Store: st, RefusalTTL: time.Minute, Now: func() time.Time { return now }}
	for range 3 {
		if _, err := sh.Get(context.Background(), "api", "me"); !errors.Is(err, errDenied) {
			t.Fatalf("get: %v", err)
		}
	}
	if n := st.reads.Load(); n != 1 {
		t.Errorf("%d reads within the refusal TTL, want 1", n)
	}
	now = now.Add(time.Minute + time.Second)
	_, _ = sh.Get(context.Background(), "api", "me")
	if n := st.reads.Load(); n != 2 {
		t.Errorf("%d reads after the TTL, want 2", n)
	}
	// Storing the item forgets the refusal.
	st.err = nil
	_ = sh.Set(context.Background(), "api", "me", "w")
	if v, err := sh.Get(context.Background(), "api", "me"); v != "w" || err != nil {
		t.Errorf("get after set: %q %v", v, err)
	}
	// Not found is no refusal: it is asked again.
	before := st.reads.Load()
	for range 2 {
		if _, err := sh.Get(context.Background(), "x", "y"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("missing: %v", err)
		}
	}
	if st.reads.Load() != before+2 {
		t.Errorf("not found was cached")
	}
}

// Decide over a store that cannot tell whether a read asks (no Prober):
// each item read once, a missing one is no error, an unavailable store
// is a Denied item carrying its error; nothing is printed.
func TestDecidePlainStore(t *testing.T) {
	m := &Memory{}
	_ = m.Set(context.Background(), "a", "1", "v")
	var out strings.Builder
	ds := Decide(context.Background(), m, []Ref{{"a", "1"}, {"missing", "x"}, {"a", "1"}}, &out)
	if len(ds) != 2 || ds[0].State != ItemSilent || ds[1].State != ItemMissing || ds[0].Err != nil || out.Len() != 0 {
		t.Errorf("decisions %+v, printed %q", ds, out.String())
	}
	m.Unavailable = true
	if ds := Decide(context.Background(), m, []Ref{{"a", "1"}}, nil); len(ds) != 1 || ds[0].State != ItemDenied || !errors.Is(ds[0].Err, ErrUnavailable) {
		t.Errorf("an unavailable store: %+v", ds)
	}
}

func TestSetOwnedReplacesAnExistingItem(t *testing.T) {
	errDup := errors.New("duplicate item")
	isDup := func(err error) bool { return errors.Is(err, errDup) }
	for _, tc := range []struct {
		name    string
		adds    []error
		del     error
		want    []string
		wantErr bool
	}{
		{"new", []error{nil}, nil, []string{"add"}, false},
		{"existing", []error{errDup, nil}, nil, []string{"add", "delete", "add"}, false},
		{"gone in between", []error{errDup, nil}, NotFound("s", "a"), []string{"add", "delete", "add"}, false},
		{"delete refused", []error{errDup}, errors.New("denied"), []string{"add", "delete"}, true},
		{"second add fails", []error{errDup, errors.New("disk")}, nil, []string{"add", "delete", "add"}, true},
		{"other error", []error{errors.New("locked")}, nil, []string{"add"}, true},
	} {
		var calls []string
		adds := tc.adds
		add := func() error {
			calls = append(calls, "add")
			err := adds[0]
			adds = adds[1:]
			return err
		}
		del := func() error { calls = append(calls, "delete"); return tc.del }
		err := setOwned(add, del, isDup)
		if (err != nil) != tc.wantErr || len(calls) != len(tc.want) {
			t.Errorf("%s: calls %v err %v", tc.name, calls, err)
		}
	}
}
