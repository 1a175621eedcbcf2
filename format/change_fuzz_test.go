package format

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weirflow/weir/arrowflow"
)

// debeziumReference reads a debezium-json event with encoding/json: the
// row images the event gives, as JSON objects, with their kinds; ok is
// false when the event is not one (the decoder must then reject it).
func debeziumReference(value []byte) (imgs [][]byte, kinds []arrowflow.RowKind, ok bool) {
	if len(value) == 0 {
		return nil, nil, true
	}
	var ev map[string]json.RawMessage
	if json.Unmarshal(value, &ev) != nil {
		return nil, nil, false
	}
	var op string
	if json.Unmarshal(ev["op"], &op) != nil {
		return nil, nil, false
	}
	img := func(name string) []byte {
		v := bytes.TrimSpace(ev[name])
		if len(v) == 0 || string(v) == "null" {
			return nil
		}
		return v
	}
	before, after := img("before"), img("after")
	switch op {
	case "c", "r":
		if after == nil {
			return nil, nil, false
		}
		return [][]byte{after}, []arrowflow.RowKind{arrowflow.Insert}, true
	case "u":
		if before == nil || after == nil {
			return nil, nil, false
		}
		return [][]byte{before, after}, []arrowflow.RowKind{arrowflow.UpdateBefore, arrowflow.UpdateAfter}, true
	case "d":
		if before == nil {
			return nil, nil, false
		}
		return [][]byte{before}, []arrowflow.RowKind{arrowflow.Delete}, true
	}
	return nil, nil, false
}

// overlay returns the object data with the members of old in place.
func overlay(data, old json.RawMessage) ([]byte, bool) {
	var d, o map[string]json.RawMessage
	if json.Unmarshal(data, &d) != nil || d == nil || json.Unmarshal(old, &o) != nil || o == nil {
		return nil, false
	}
	for k, v := range o {
		d[k] = v
	}
	b, err := json.Marshal(d)
	return b, err == nil
}

// canalMaxwellReference reads a canal-json (canal) or maxwell-json event
// with encoding/json, as debeziumReference.
func canalMaxwellReference(value []byte, canal bool) (imgs [][]byte, kinds []arrowflow.RowKind, ok bool) {
	if len(value) == 0 {
		return nil, nil, true
	}
	// A map, not a struct: encoding/json matches struct fields
	// regardless of case.
	var top map[string]json.RawMessage
	if json.Unmarshal(value, &top) != nil || top == nil {
		return nil, nil, false
	}
	var ev struct {
		Data, Old json.RawMessage
		Type      *string
		IsDdl     *bool
	}
	ev.Data, ev.Old = top["data"], top["old"]
	if json.Unmarshal(top["type"], &ev.Type) != nil || ev.Type == nil {
		return nil, nil, false
	}
	if v, ok := top["isDdl"]; ok && json.Unmarshal(v, &ev.IsDdl) != nil {
		return nil, nil, false
	}
	typ := *ev.Type
	var data, old []json.RawMessage
	if canal {
		if ev.IsDdl != nil && *ev.IsDdl || typ == "CREATE" {
			return nil, nil, true
		}
		if json.Unmarshal(ev.Data, &data) != nil || data == nil {
			return nil, nil, false
		}
		if typ == "UPDATE" && (json.Unmarshal(ev.Old, &old) != nil || len(old) < len(data)) {
			return nil, nil, false
		}
		typ = map[string]string{"INSERT": "insert", "UPDATE": "update", "DELETE": "delete"}[typ]
	} else {
		data, old = []json.RawMessage{ev.Data}, []json.RawMessage{ev.Old}
	}
	for i, d := range data {
		if len(d) == 0 || string(d) == "null" {
			return nil, nil, false
		}
		switch typ {
		case "insert", "delete":
			k := arrowflow.Insert
			if typ == "delete" {
				k = arrowflow.Delete
			}
			imgs, kinds = append(imgs, d), append(kinds, k)
		case "update":
			before, ok := overlay(d, old[i])
			if !ok {
				return nil, nil, false
			}
			imgs = append(imgs, before, d)
			kinds = append(kinds, arrowflow.UpdateBefore, arrowflow.UpdateAfter)
		default:
			return nil, nil, false
		}
	}
	return imgs, kinds, true
}

// FuzzChangeJSON feeds arbitrary values to the three change decoders (with
// metadata columns): a rejected value adds no row, an accepted one adds
// the rows it reports, and the batch stays valid. Each is also checked
// against a reference reading the envelope with encoding/json and the
// images with the json decoder: an event the decoder accepts gives the
// reference's rows and kinds.
func FuzzChangeJSON(f *testing.F) {
	for _, s := range []string{
		`{"before":null,"after":{"id":1,"name":"a"},"op":"c"}`,
		`{"before":{"id":1},"after":{"id":2,"weight":1.5},"source":{"db":"x","table":"t","ts_ms":3},"op":"u","ts_ms":4}`,
		`{"after":{"id":2},"before":{"id":1},"op":"u"}`,
		`{"before":{"id":1},"after":{"id":9},"op":"d"}`,
		canalUpdateSample,
		`{"data":[{"id":"1"},{"id":"2"}],"old":[{"name":null},{}],"type":"UPDATE","database":"d","table":"t","ts":1,"es":2,"pkNames":["id"],"sqlType":{"id":4}}`,
		`{"data":[{"id":"1"}],"type":"INSERT"}`,
		`{"type":"update","data":{"id":1,"name":"b"},"old":{"name":"a"},"ts":5,"database":"d","table":"t","primary_key_columns":["id"]}`,
		`{"type":"delete","data":{"id":1}}`,
		``,
	} {
		f.Add([]byte(s))
	}
	var builders []ChangeBatchBuilder
	var names []string
	for _, c := range []struct {
		name string
		keys []string
	}{
		{DebeziumJSON, []string{"source.table", "ingestion-timestamp", "source.properties"}},
		{CanalJSON, []string{"sql-type", "pk-names", "event-timestamp"}},
		{MaxwellJSON, []string{"ingestion-timestamp", "primary-key-columns"}},
	} {
		md := mustDecoder(f, Config{Name: c.name, Schema: productsSchema}).(MetadataDecoder)
		d, err := md.WithMetadata(c.keys...)
		if err != nil {
			f.Fatal(err)
		}
		builders = append(builders, d.NewChangeBuilder(memory.DefaultAllocator))
		names = append(names, c.name)
	}
	refs := []func([]byte) ([][]byte, []arrowflow.RowKind, bool){
		debeziumReference,
		func(v []byte) ([][]byte, []arrowflow.RowKind, bool) { return canalMaxwellReference(v, true) },
		func(v []byte) ([][]byte, []arrowflow.RowKind, bool) { return canalMaxwellReference(v, false) },
	}
	var plains []ChangeBatchBuilder
	for _, name := range names {
		plains = append(plains, mustChangeDecoder(f, Config{Name: name, Schema: productsSchema}).NewChangeBuilder(memory.DefaultAllocator))
	}
	rows := mustDecoder(f, Config{Name: "json", Schema: productsSchema}).NewBuilder(memory.DefaultAllocator)
	f.Fuzz(func(t *testing.T, value []byte) {
		for i, b := range builders {
			// A good event first, so that a rejected one must leave it.
			if _, err := b.AppendChange([]byte(`{"before":null,"after":{"id":7},"op":"c","data":{"id":7},"type":"insert"}`)); err != nil && names[i] != CanalJSON {
				t.Fatalf("%s: %v", names[i], err)
			}
			before := b.Len()
			n, err := b.AppendChange(value)
			if err != nil && (n != 0 || b.Len() != before) || err == nil && b.Len() != before+n {
				t.Fatalf("%s: %d rows, Len %d -> %d, error %v", names[i], n, before, b.Len(), err)
			}
			rec, kinds := b.NewChangeRecord()
			if err := array.ValidateRecordFull(rec); err != nil || len(kinds) != int(rec.NumRows()) {
				t.Fatalf("%s: invalid batch (%d kinds, %d rows): %v", names[i], len(kinds), rec.NumRows(), err)
			}
			rec.Release()
		}

		for i, plain := range plains {
			n, err := plain.AppendChange(value)
			got, gotKinds := plain.NewChangeRecord()
			defer got.Release()
			if err != nil {
				continue
			}
			imgs, kinds, ok := refs[i](value)
			if !ok {
				t.Fatalf("%s accepted %q (%d rows), which the reference rejects", names[i], value, n)
			}
			for _, img := range imgs {
				if err := rows.Append(img); err != nil {
					t.Fatalf("%s accepted %q; the json decoder rejects the image %s: %v", names[i], value, img, err)
				}
			}
			want := rows.NewRecord()
			defer want.Release()
			if fmtKinds(kinds) != fmtKinds(gotKinds) {
				t.Fatalf("%s %q: kinds %v, want %v", names[i], value, gotKinds, kinds)
			}
			diffRows(t, rowsOf(want), rowsOf(got))
		}
	})
}

func fmtKinds(k []arrowflow.RowKind) string {
	return fmt.Sprint(k)
}
