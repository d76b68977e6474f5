// Package config reads rate-limit policies written in envoyproxy/ratelimit's YAML
// format, with rlserver's extensions (algorithms, windows, bursts, priority classes),
// and matches a descriptor's entries to its rule as their GetLimit does. It keeps no
// state and decides nothing: policy/engine does, on a store. The name is theirs: their
// src/config loads and matches the same files.
package config
