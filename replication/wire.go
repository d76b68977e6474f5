package replication

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// The wire pieces of replication shared by both sides: commands as RESP, lines, and
// the snapshot's chunked stream.

// respCommand encodes a command as a RESP array of bulk strings.
func respCommand(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

// readLine reads one reply line without its CRLF.
func readLine(br *bufio.Reader) (string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// chunkReader reads the chunks of a streamed snapshot, io.EOF after the last.
type chunkReader struct {
	r    *bufio.Reader
	conn net.Conn
	left int
	done bool
}

func (c *chunkReader) Read(p []byte) (int, error) {
	for c.left == 0 {
		if c.done {
			return 0, io.EOF
		}
		c.conn.SetReadDeadline(time.Now().Add(replTimeout))
		var h [4]byte
		if _, err := io.ReadFull(c.r, h[:]); err != nil {
			return 0, err
		}
		n := binary.LittleEndian.Uint32(h[:])
		if n > chunkMax {
			return 0, fmt.Errorf("corrupt stream: a snapshot chunk of %d bytes", n)
		}
		c.left, c.done = int(n), n == 0
	}
	n, err := c.r.Read(p[:min(len(p), c.left)])
	c.left -= n
	return n, err
}

// chunkWriter cuts a snapshot into chunks.
type chunkWriter struct {
	w    *bufio.Writer
	conn net.Conn
	buf  []byte
}

func (c *chunkWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), chunkMax-len(c.buf))
		c.buf = append(c.buf, p[:k]...)
		p = p[k:]
		if len(c.buf) == chunkMax {
			if err := c.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// flush writes the buffered bytes as one chunk (an empty one ends the snapshot).
func (c *chunkWriter) flush() error {
	c.conn.SetWriteDeadline(time.Now().Add(replTimeout))
	var h [4]byte
	binary.LittleEndian.PutUint32(h[:], uint32(len(c.buf)))
	c.w.Write(h[:])
	c.w.Write(c.buf)
	c.buf = c.buf[:0]
	return c.w.Flush()
}

// close writes the last chunk and the end.
func (c *chunkWriter) close() error {
	if len(c.buf) > 0 {
		if err := c.flush(); err != nil {
			return err
		}
	}
	return c.flush()
}
