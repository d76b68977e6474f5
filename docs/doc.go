// Package docs holds no code: its tests keep README.md and the pages of docs/ true.
// They replay the pages' redis-cli sessions on a server at a frozen clock, parse
// their policy, config and ACL snippets with rlserver's own loaders, compile their Go
// snippets (examples_test.go) and check their flags, make targets, links and the
// package map of architecture.md against the tree.
package docs
