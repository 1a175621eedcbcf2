package parquet

import (
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// arrow-go compresses each Parquet page with a zstd encoder taken from a
// sync.Pool. A sink allocating Arrow batches runs the garbage collector
// often, which empties such pools, and every new encoder allocates and
// clears a history buffer of about 1 MiB on its first page: a CPU profile
// of the windowed built-in job showed 19% of all CPU time in clearing
// memory, mostly there. This codec keeps its encoders in a bounded free
// list instead, which the collector leaves alone. Its output is the same
// zstd format; decoding is arrow-go's own.
type pooledZstd struct {
	compress.Codec // arrow-go's zstd codec, for decoding and bounds

	mu   sync.Mutex
	free map[zstd.EncoderLevel][]*zstd.Encoder
}

// maxFreeEncoders bounds the encoders kept per level.
const maxFreeEncoders = 8

func init() {
	orig, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		return // not built in: leave it alone
	}
	compress.RegisterCodec(compress.Codecs.Zstd, &pooledZstd{Codec: orig, free: map[zstd.EncoderLevel][]*zstd.Encoder{}})
}

func (z *pooledZstd) Encode(dst, src []byte) []byte {
	return z.EncodeLevel(dst, src, compress.DefaultCompressionLevel)
}

func (z *pooledZstd) EncodeLevel(dst, src []byte, level int) []byte {
	lvl := zstd.SpeedDefault
	if level != compress.DefaultCompressionLevel {
		lvl = zstd.EncoderLevelFromZstd(level)
	}
	z.mu.Lock()
	var enc *zstd.Encoder
	if list := z.free[lvl]; len(list) > 0 {
		enc = list[len(list)-1]
		z.free[lvl] = list[:len(list)-1]
	}
	z.mu.Unlock()
	if enc == nil {
		// The options arrow-go uses, so the bytes are the same.
		enc, _ = zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(lvl),
			zstd.WithEncoderConcurrency(1), zstd.WithAllLitEntropyCompression(true))
	}
	out := enc.EncodeAll(src, dst[:0])
	z.mu.Lock()
	if len(z.free[lvl]) < maxFreeEncoders {
		z.free[lvl] = append(z.free[lvl], enc)
	}
	z.mu.Unlock()
	return out
}

// DecodeWithError, NewReader, NewWriter and NewWriterLevel pass through
// to arrow-go's codec.

func (z *pooledZstd) DecodeWithError(dst, src []byte) ([]byte, error) {
	if ec, ok := z.Codec.(compress.ErrorCodec); ok {
		return ec.DecodeWithError(dst, src)
	}
	return z.Codec.Decode(dst, src), nil
}

func (z *pooledZstd) NewReader(r io.Reader) io.ReadCloser {
	return z.Codec.(compress.StreamingCodec).NewReader(r)
}

func (z *pooledZstd) NewWriter(w io.Writer) io.WriteCloser {
	return z.Codec.(compress.StreamingCodec).NewWriter(w)
}

func (z *pooledZstd) NewWriterLevel(w io.Writer, level int) (io.WriteCloser, error) {
	return z.Codec.(compress.StreamingCodec).NewWriterLevel(w, level)
}
