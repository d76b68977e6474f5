package store

// Keys grouped by Config.Partition: each shard keeps, per partition, the slots of
// its keys' records (records never move while their key lives), so that cluster
// mode's CLUSTER COUNTKEYSINSLOT and GETKEYSINSLOT, which redis-cli calls for each
// slot it moves, cost the keys of that slot and not a scan of the store.

// addPart files the new record at slot under key's partition.
func (sh *shard) addPart(key []byte, slot uint32) {
	p := sh.partOf(key)
	if sh.parts == nil {
		sh.parts = map[uint16]map[uint32]struct{}{}
	}
	set := sh.parts[p]
	if set == nil {
		set = map[uint32]struct{}{}
		sh.parts[p] = set
	}
	set[slot] = struct{}{}
}

// dropPart takes the record at slot, of key, out of its partition.
func (sh *shard) dropPart(key []byte, slot uint32) {
	p := sh.partOf(key)
	if set := sh.parts[p]; set != nil {
		delete(set, slot)
		if len(set) == 0 {
			delete(sh.parts, p)
		}
	}
}

// CountPartition is the number of keys of partition p holding a state at now; 0
// without Config.Partition.
func (s *Store) CountPartition(p uint16, now int64) int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for slot := range sh.parts[p] {
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
		for slot := range sh.parts[p] {
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
