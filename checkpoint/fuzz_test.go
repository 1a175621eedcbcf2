package checkpoint

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/state"
)

// sampleCheckpoint is a checkpoint with every part filled in.
func sampleCheckpoint() *arrowflow.Checkpoint {
	return &arrowflow.Checkpoint{
		Job: "windowed", Epoch: 42, Owner: "0123456789abcdef0123456789abcdef", Lineage: "0123456789abcdef0123456789abcdef",
		Shape: []string{"source generate", "operator per-key-windows <- generate keyed by [key]"}, Fingerprint: "abc123",
		MaxParallelism: 128,
		Sources:        map[string][]arrowflow.SplitState{"generate": {{Split: "0", Position: []byte{0, 0, 0, 0, 0, 0, 1, 0}}, {Split: "1", Position: []byte("17:20")}}},
		Operators: map[string]*arrowflow.OperatorCheckpoint{"per-key-windows": {Subtasks: []arrowflow.SubtaskCheckpoint{
			{State: state.Handle{ID: "windowed/00000000000000000042/per-key-windows-0", Bytes: 1234}}, {Finished: true},
		}}},
		Sinks: map[string]*arrowflow.SinkCheckpoint{"parquet": {Payloads: [][]byte{[]byte(`{"version":1}`), nil}}},
	}
}

// FuzzDecodeManifest feeds arbitrary bytes to the manifest decoder that
// recovery and savepoints use: it must never panic, and whatever it
// accepts must encode again to a manifest that decodes to the same
// checkpoint (so a checkpoint read is the one written).
func FuzzDecodeManifest(f *testing.F) {
	good, err := encodeManifest(sampleCheckpoint())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	empty, _ := encodeManifest(&arrowflow.Checkpoint{})
	f.Add(empty)
	for _, i := range []int{0, 10, len(good) / 2, len(good) - 2} {
		bad := append([]byte(nil), good...)
		bad[i] ^= 0x20
		f.Add(bad)
	}
	f.Add(good[:len(good)/2])
	f.Add([]byte(`{"format":"weir-checkpoint/1","crc32c":"00000000","checkpoint":null}`))
	f.Add([]byte(`{"format":"weir-checkpoint/1","crc32c":"","checkpoint":{"sources":{"s":[{"split":"0","position":"AAA="}]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cp, err := decodeManifest("fuzz.json", data)
		if err != nil {
			return
		}
		again, err := encodeManifest(cp)
		if err != nil {
			t.Fatalf("re-encode an accepted manifest: %v", err)
		}
		cp2, err := decodeManifest("again.json", again)
		if err != nil {
			t.Fatalf("a re-encoded manifest does not decode: %v", err)
		}
		// Compare through JSON: nil and empty collections are the same
		// manifest.
		a, _ := json.Marshal(cp)
		b, _ := json.Marshal(cp2)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("manifest changed in a round trip:\n%s\n%s", a, b)
		}
	})
}
