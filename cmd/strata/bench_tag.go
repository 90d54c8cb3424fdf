//go:build bench

package main

// benchBuilt reports whether this binary holds the benchmark drivers (-tags bench).
const benchBuilt = true
