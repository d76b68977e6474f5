package store

// Keys grouped by Config.Partition: each shard keeps, per partition, the list of
// its keys' record slots (records never move while their key lives), and for each
// record its place in that list, so that a key leaves its list in O(1). Cluster
// mode's CLUSTER COUNTKEYSINSLOT and GETKEYSINSLOT, which redis-cli calls for each
// slot it moves, then cost the keys of that slot, not a scan of the store. The
// lists and places take about 11 bytes of Go heap a key, where maps of sets took
// 101 (TestPartitionBytes), beside the store's 49 off the heap.

// addPart files the new record at slot under key's partition.
func (sh *shard) addPart(key []byte, slot uint32) {
	p := sh.partOf(key)
	if sh.parts == nil {
		sh.parts = map[uint16][]uint32{}
	}
	list := sh.parts[p]
	c, i := slot>>slotClassShift, slot&slotIndexMask
	pos := &sh.partPos[c]
	if int(i) >= len(*pos) {
		*pos = append(*pos, make([]uint32, int(i)+1-len(*pos))...)
	}
	(*pos)[i] = uint32(len(list))
	sh.parts[p] = append(list, slot)
}

// dropPart takes the record at slot, of key, out of its partition: the partition's
// last record takes its place in the list.
func (sh *shard) dropPart(key []byte, slot uint32) {
	p := sh.partOf(key)
	list := sh.parts[p]
	j := sh.partPos[slot>>slotClassShift][slot&slotIndexMask]
	last := list[len(list)-1]
	list[j] = last
	sh.partPos[last>>slotClassShift][last&slotIndexMask] = j
	if list = list[:len(list)-1]; len(list) == 0 {
		delete(sh.parts, p)
	} else {
		sh.parts[p] = list
	}
}

// CountPartition is the number of keys of partition p holding a state at now; 0
// without Config.Partition.
func (s *Store) CountPartition(p uint16, now int64) int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for _, slot := range sh.parts[p] {
			if sh.at(slot).deadline() > now {
				n++
			}
		}
		sh.mu.Unlock()
	}
	return n
}

// KeysInPartition returns up to max keys of partition p holding a state at now:
// never one whose state is fresh, which a caller moving the keys away would
// otherwise be given again and again.
func (s *Store) KeysInPartition(p uint16, max int, now int64) [][]byte {
	var keys [][]byte
	for i := range s.shards {
		if len(keys) >= max {
			break
		}
		sh := &s.shards[i]
		sh.mu.Lock()
		for _, slot := range sh.parts[p] {
			if len(keys) >= max {
				break
			}
			if e := sh.at(slot); e.deadline() > now {
				keys = append(keys, append([]byte(nil), sh.key(e)...))
			}
		}
		sh.mu.Unlock()
	}
	return keys
}
