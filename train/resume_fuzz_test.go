package train

import (
	"errors"
	"strings"
	"testing"

	"github.com/spiderenv/spider/agents/nn"
	"github.com/spiderenv/spider/internal/alloccount"
)

// FuzzResume feeds arbitrary training states, beside a real network, to
// the reader of train --resume: it must never panic nor allocate much
// more than the state's bytes before admit has seen the configuration
// (admit here refuses a run whose buffers would pass 32 MB), and a run it
// accepts must be one Validate accepts, with the saved games its own.
func FuzzResume(f *testing.F) {
	dir := f.TempDir()
	tr, err := New(tinyConfig())
	if err != nil {
		f.Fatal(err)
	}
	path := dir + "/fresh.spider"
	err = tr.Save(path)
	tr.Close()
	if err != nil {
		f.Fatal(err)
	}
	net, raw, err := nn.Load(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(raw))
	f.Add([]byte{0x81, 0xa7, 'v', 'e', 'r', 's', 'i', 'o', 'n', 0x02})
	tooBig := errors.New("buffers over 32 MB")
	admit := func(c Config) error {
		if need, err := c.BufferBytes(); err != nil || need > 32<<20 {
			return tooBig
		}
		return nil
	}
	if tr, err := resume("fresh.spider", net, raw, nil, admit); err != nil {
		f.Fatalf("the fresh run's state: %v", err)
	} else {
		tr.Close()
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got *Trainer
		var err error
		admitted := false
		used := alloccount.BytesFast(func() {
			got, err = resume("fuzz.spider", net, b, nil, func(c Config) error {
				admitted = true
				return admit(c)
			})
		})
		if !admitted && used > 32*uint64(len(b))+16<<20 {
			t.Fatalf("refusing %d bytes before admit allocated %d", len(b), used)
		}
		if err != nil {
			if !errors.Is(err, tooBig) && !strings.HasPrefix(err.Error(), "fuzz.spider: ") {
				t.Fatalf("an error that does not name the file: %v", err)
			}
			return
		}
		defer got.Close()
		if err := got.Config.Validate(); err != nil {
			t.Fatalf("accepted a run Validate refuses: %v", err)
		}
		if got.batch.N() != got.Config.Games {
			t.Fatalf("a batch of %d games for a run of %d", got.batch.N(), got.Config.Games)
		}
	})
}
