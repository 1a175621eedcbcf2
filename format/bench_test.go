package format

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/hamba/avro/v2"
)

// The Nexmark bid, the record of most streaming benchmarks.
var bidSchema = arrow.NewSchema([]arrow.Field{
	{Name: "auction", Type: arrow.PrimitiveTypes.Int64},
	{Name: "bidder", Type: arrow.PrimitiveTypes.Int64},
	{Name: "price", Type: arrow.PrimitiveTypes.Int64},
	{Name: "channel", Type: arrow.BinaryTypes.String},
	{Name: "url", Type: arrow.BinaryTypes.String},
	{Name: "date_time", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
	{Name: "extra", Type: arrow.BinaryTypes.String},
}, nil)

// bid is the baselines' Go struct.
type bid struct {
	Auction  int64     `json:"auction" avro:"auction"`
	Bidder   int64     `json:"bidder" avro:"bidder"`
	Price    int64     `json:"price" avro:"price"`
	Channel  string    `json:"channel" avro:"channel"`
	URL      string    `json:"url" avro:"url"`
	DateTime time.Time `json:"date_time" avro:"date_time"`
	Extra    string    `json:"extra" avro:"extra"`
}

const benchRecords = 10000

// bidBatch generates Nexmark-like bids with a fixed seed.
func bidBatch(mem memory.Allocator, n int) arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(1, 2))
	b := array.NewRecordBuilder(mem, bidSchema)
	defer b.Release()
	channels := []string{"Google", "Facebook", "Baidu", "Apple"}
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "
	start := time.Date(2015, 7, 15, 0, 0, 0, 0, time.UTC).UnixMilli()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(1000 + rng.Int64N(10000))
		b.Field(1).(*array.Int64Builder).Append(1000 + rng.Int64N(100000))
		b.Field(2).(*array.Int64Builder).Append(100 + rng.Int64N(10_000_000))
		ch := channels[rng.IntN(len(channels))]
		b.Field(3).(*array.StringBuilder).Append(ch)
		b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("https://www.nexmark.com/%s/item.htm?query=1&channel_id=%d",
			randomWord(rng, letters[:52], 4), rng.IntN(100000)))
		b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(start + int64(i)*10 + rng.Int64N(10)))
		b.Field(6).(*array.StringBuilder).Append(randomWord(rng, letters, 20+rng.IntN(81)))
	}
	return b.NewRecordBatch()
}

func randomWord(rng *rand.Rand, letters string, n int) string {
	w := make([]byte, n)
	for i := range w {
		w[i] = letters[rng.IntN(len(letters))]
	}
	return string(w)
}

func encodeBids(b *testing.B, format string) [][]byte {
	rec := bidBatch(memory.DefaultAllocator, benchRecords)
	defer rec.Release()
	enc, err := NewEncoder(context.Background(), Config{Name: format, Schema: bidSchema})
	if err != nil {
		b.Fatal(err)
	}
	var values [][]byte
	if err := enc.Encode(rec, func(_ int, v []byte) error {
		values = append(values, append([]byte(nil), v...))
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	return values
}

// runDecode times decoding values one record per iteration, reporting
// bytes (MB/s) and records per second.
func runDecode(b *testing.B, values [][]byte, decode func(v []byte) error) {
	total := 0
	for _, v := range values {
		total += len(v)
	}
	b.SetBytes(int64(total / len(values)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := decode(values[i%len(values)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// weirDecode decodes through a BatchBuilder, closing a batch every 4096
// records as a source would.
func weirDecode(b *testing.B, format string, values [][]byte) {
	dec, err := NewDecoder(context.Background(), Config{Name: format, Schema: bidSchema})
	if err != nil {
		b.Fatal(err)
	}
	bb := dec.NewBuilder(memory.NewGoAllocator())
	defer bb.Release()
	runDecode(b, values, func(v []byte) error {
		if err := bb.Append(v); err != nil {
			return err
		}
		if bb.Len() == 4096 {
			bb.NewRecord().Release()
		}
		return nil
	})
}

func BenchmarkDecodeBid(b *testing.B) {
	jsonValues := encodeBids(b, "json")
	avroValues := encodeBids(b, "avro")
	b.Run("json-weir", func(b *testing.B) { weirDecode(b, "json", jsonValues) })
	b.Run("json-encoding-json", func(b *testing.B) {
		var x bid
		runDecode(b, jsonValues, func(v []byte) error { return json.Unmarshal(v, &x) })
	})
	b.Run("avro-weir", func(b *testing.B) { weirDecode(b, "avro", avroValues) })
	b.Run("avro-hamba", func(b *testing.B) {
		text, err := AvroSchema(bidSchema)
		if err != nil {
			b.Fatal(err)
		}
		schema := avro.MustParse(text)
		var x bid
		runDecode(b, avroValues, func(v []byte) error { return avro.Unmarshal(schema, v, &x) })
	})
}

func BenchmarkEncodeBid(b *testing.B) {
	rec := bidBatch(memory.DefaultAllocator, benchRecords)
	defer rec.Release()
	for _, format := range []string{"json", "csv", "avro"} {
		b.Run(format, func(b *testing.B) {
			enc, err := NewEncoder(context.Background(), Config{Name: format, Schema: bidSchema})
			if err != nil {
				b.Fatal(err)
			}
			bytes := 0
			if err := enc.Encode(rec, func(_ int, v []byte) error { bytes += len(v); return nil }); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(bytes))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := enc.Encode(rec, func(int, []byte) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)*benchRecords/b.Elapsed().Seconds(), "records/s")
		})
	}
}
