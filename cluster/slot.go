// Package cluster is rlserver's side of the Redis Cluster protocol: the hash slot
// of a key, computed exactly as Redis computes it, and the topology that says which
// node owns which slots and which slots are being moved. It speaks no RESP: package
// resp answers CLUSTER, MOVED, ASK and CROSSSLOT from it, and carries the tables
// the nodes exchange (merge.go).
//
// A -cluster-nodes topology is static: every node is told the whole of it at start
// and derives the same answers from it, and the nodes never talk. A
// -cluster-enabled one is built by redis-cli --cluster, kept in Redis's nodes.conf
// format (table.go), changed by its commands (change.go) and kept in step between
// the nodes by the exchange of their tables.
package cluster

import "bytes"

// Slots is the number of hash slots, as in Redis Cluster.
const Slots = 16384

// crc16Tables are CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0, no
// reflection), the checksum of Redis's crc16.c, sliced by eight: table k maps a
// byte to the CRC of that byte followed by k zero bytes. Eight bytes a step
// break the chain of dependent lookups of the byte-at-a-time loop, several times
// faster on keys of rate-limit length (BenchmarkCRC16 compares both). The tables
// take 4 KiB.
var crc16Tables = func() (t [8][256]uint16) {
	for i := range t[0] {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[0][i] = crc
	}
	for k := 1; k < len(t); k++ {
		for i := range t[k] {
			prev := t[k-1][i]
			t[k][i] = prev<<8 ^ t[0][prev>>8]
		}
	}
	return t
}()

func crc16(b []byte) uint16 {
	var crc uint16
	for ; len(b) >= 8; b = b[8:] {
		crc = crc16Tables[7][byte(crc>>8)^b[0]] ^ crc16Tables[6][byte(crc)^b[1]] ^
			crc16Tables[5][b[2]] ^ crc16Tables[4][b[3]] ^
			crc16Tables[3][b[4]] ^ crc16Tables[2][b[5]] ^
			crc16Tables[1][b[6]] ^ crc16Tables[0][b[7]]
	}
	for _, c := range b {
		crc = crc<<8 ^ crc16Tables[0][byte(crc>>8)^c]
	}
	return crc
}

// Slot is the hash slot of key, as Redis's keyHashSlot: CRC16 of the key modulo
// 16384, or of its hash tag, the part between the first '{' and the first '}'
// after it, when that part is not empty. Keys that share a tag ("{user1}.a",
// "{user1}.b") share a slot, so one node holds them all.
func Slot(key []byte) uint16 {
	if open := bytes.IndexByte(key, '{'); open >= 0 {
		if n := bytes.IndexByte(key[open+1:], '}'); n > 0 {
			key = key[open+1 : open+1+n]
		}
	}
	return crc16(key) & (Slots - 1)
}
