// Command warden lets LLM agents use real tools on a real machine inside
// lines a person drew. This package only wires flags to internal packages.
package main

import "os"

func main() { os.Exit(run(os.Args[1:])) }
