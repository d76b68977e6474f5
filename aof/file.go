package aof

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/zeebo/xxh3"
)

// An increment file holds the store's effect records (store.Journal), framed, little-
// endian:
//
//	header  magic "RLAOF\r\n\x00", version uint32: the records' format (store.EffectVersion)
//	frame   length uint32 (> 0), its complement uint32, xxh3 of the body uint64, body
//
// A frame is one batch the writer took from the journal: whole records, written with
// one write and made durable by one fsync under appendfsync always. The length's
// complement tells a flipped byte in a length, which would otherwise read as a frame
// running past the end, from a frame the crash cut short; the checksum tells a frame
// whose bytes changed.
//
// Loading stops at the first frame that is not whole and valid. If that frame runs
// past the file's end (a crash mid-write: a torn tail) the frames before it load,
// with a warning, and the file is truncated there (aof-load-truncated yes, as Redis);
// anything else is corruption, refused with the file and the frame's offset, for
// `rlserver check-aof --fix` to truncate after a look.
const (
	fileMagic     = "RLAOF\r\n\x00"
	fileHeadBytes = 8 + 4
	frameHead     = 4 + 4 + 8
	maxFrame      = 1 << 30 // the longest body read; the writer cuts batches below it
)

// appendHeader appends an increment file's header.
func appendHeader(dst []byte, version uint32) []byte {
	dst = append(dst, fileMagic...)
	return binary.LittleEndian.AppendUint32(dst, version)
}

// appendFrame appends body (whole records) as a frame.
func appendFrame(dst, body []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(body)))
	dst = binary.LittleEndian.AppendUint32(dst, ^uint32(len(body)))
	dst = binary.LittleEndian.AppendUint64(dst, xxh3.Hash(body))
	return append(dst, body...)
}

// Errors of reading a log's files.
var (
	// ErrTorn is wrapped by the error of a file whose last frame the end cuts short.
	ErrTorn = errors.New("aof: the last frame is cut short (a crash mid-write)")
	// ErrCorrupt is wrapped by the error of a file with a frame neither whole and
	// valid nor cut short by the end, or that is not an increment file of rlserver's.
	ErrCorrupt = errors.New("aof: file is corrupt")
	// ErrManifest is wrapped by the error of a manifest that does not parse.
	ErrManifest = errors.New("aof: bad manifest")
)

// FrameError says where an increment file stops being whole and valid.
type FrameError struct {
	Path   string
	Offset int64 // the byte at which the bad or cut frame starts: what a fix keeps before
	Err    error // ErrTorn or ErrCorrupt, wrapped with the reason
}

func (e *FrameError) Error() string {
	return fmt.Sprintf("%s: at byte %d: %v", e.Path, e.Offset, e.Err)
}

func (e *FrameError) Unwrap() error { return e.Err }

// readIncr reads the increment file path, calling start with its records' version
// and then each with every valid frame's body in order, and returns the records' version and the file's valid length. A file that
// stops being valid gives a *FrameError, after each has had the frames before.
func readIncr(path string, each func(body []byte) error, start func(version uint32)) (uint32, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	size := st.Size()
	r := bufio.NewReaderSize(f, 256<<10)
	var head [fileHeadBytes]byte
	if n, err := io.ReadFull(r, head[:]); err != nil {
		if n < len(head) && string(head[:n]) == fileMagic[:min(n, len(fileMagic))] {
			return 0, 0, &FrameError{path, 0, fmt.Errorf("%w: the header is cut short", ErrTorn)}
		}
		return 0, 0, &FrameError{path, 0, fmt.Errorf("%w: not an rlserver append-only file", ErrCorrupt)}
	}
	if string(head[:8]) != fileMagic {
		return 0, 0, &FrameError{path, 0, fmt.Errorf("%w: not an rlserver append-only file (no RLAOF header)", ErrCorrupt)}
	}
	version := binary.LittleEndian.Uint32(head[8:])
	start(version)
	off := int64(fileHeadBytes)
	var body []byte
	for off < size {
		var fh [frameHead]byte
		if size-off < frameHead {
			return version, off, &FrameError{path, off, fmt.Errorf("%w: %d bytes of a frame's head", ErrTorn, size-off)}
		}
		if _, err := io.ReadFull(r, fh[:]); err != nil {
			return version, off, err
		}
		n := binary.LittleEndian.Uint32(fh[:])
		if n == 0 || n > maxFrame || binary.LittleEndian.Uint32(fh[4:]) != ^n {
			return version, off, &FrameError{path, off, fmt.Errorf("%w: bad frame length", ErrCorrupt)}
		}
		if size-off-frameHead < int64(n) {
			return version, off, &FrameError{path, off, fmt.Errorf("%w: %d of the frame's %d bytes", ErrTorn, size-off-frameHead, n)}
		}
		if cap(body) < int(n) {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(r, body); err != nil {
			return version, off, err
		}
		if xxh3.Hash(body) != binary.LittleEndian.Uint64(fh[8:]) {
			return version, off, &FrameError{path, off, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)}
		}
		if err := each(body); err != nil {
			return version, off, &FrameError{path, off, fmt.Errorf("%w: %v", ErrCorrupt, err)}
		}
		off += frameHead + int64(n)
	}
	return version, off, nil
}
