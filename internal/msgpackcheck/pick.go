package msgpackcheck

import "fmt"

// Pick returns a msgpack map of the entries of the map at the start of b
// (checked as Size does) whose keys, strings or bins as msgpack's decoder
// takes either for a field's name, are among keys, the last of each when
// a key repeats, in the order of keys. Decoding a few fields of a large
// value through it costs only those fields: msgpack skips another field by
// reading it into a buffer, so decoding a file's header from the whole
// file would allocate as much as its largest field.
func Pick(b []byte, keys ...string) ([]byte, error) {
	if len(keys) > 15 {
		return nil, fmt.Errorf("msgpackcheck: Pick takes at most 15 keys, not %d", len(keys))
	}
	n, err := Size(b)
	if err != nil {
		return nil, err
	}
	if !isMap(b[0]) {
		return nil, fmt.Errorf("not a map (code %#x)", b[0])
	}
	// The whole map is checked, so Leading reads every entry.
	return Leading(b[:n], keys...)
}

// Leading returns, as Pick does, the entries of the map at the start of b
// whose keys are among keys, but reads only the entries that lie whole in
// b, up to the first that does not, without checking the map's size: a
// file cut short still shows what its first entries say (a checkpoint's
// kind and format), so that a reader can call it truncated rather than a
// file of another kind. It returns an error if b does not start with a
// map header.
func Leading(b []byte, keys ...string) ([]byte, error) {
	if len(keys) > 15 {
		return nil, fmt.Errorf("msgpackcheck: Leading takes at most 15 keys, not %d", len(keys))
	}
	pairs, pos, err := MapLen(b)
	if err != nil {
		return nil, err
	}
	var at [15][2]int
	found := 0
	for range pairs {
		start := pos
		kn, err := Size(b[start:])
		if err != nil {
			break
		}
		vn, err := Size(b[start+kn:])
		if err != nil {
			break
		}
		pos = start + kn + vn
		kc, klen, khdr := (&walker{b: b, pos: start}).header()
		if !isString(kc) && !isBin(kc) {
			continue
		}
		key := b[start+khdr : start+khdr+klen]
		for i, k := range keys {
			if string(key) == k {
				if at[i][1] == 0 {
					found++
				}
				at[i] = [2]int{start, pos}
				break
			}
		}
	}
	out := []byte{0x80 | byte(found)}
	for i := range keys {
		if at[i][1] != 0 {
			out = append(out, b[at[i][0]:at[i][1]]...)
		}
	}
	return out, nil
}

// MapLen returns the entry count the msgpack map header at the start of b
// declares, at most len(b) (a declared 2^32-1 would not fit a 32-bit int,
// and no more entries than bytes can follow), and the header's length. It
// returns an error if b does not start with a map header.
func MapLen(b []byte) (pairs, hdr int, err error) {
	if len(b) == 0 || !isMap(b[0]) {
		return 0, 0, fmt.Errorf("not a map")
	}
	switch hdr = map[byte]int{0xde: 3, 0xdf: 5}[b[0]]; {
	case hdr == 0:
		return int(b[0] & 0x0f), 1, nil
	case len(b) < hdr:
		return 0, 0, fmt.Errorf("not a map")
	}
	return int(min(beUint(b[1:], hdr-1), uint64(len(b)))), hdr, nil
}
