package main

import (
	"flag"
	"fmt"
	"io"
)

// subcommands are this program's commands besides serving, as -h lists
// them: each its name, its arguments in short and what it does in a line.
// main dispatches on the name.
var subcommands = []struct{ name, args, summary string }{
	{"copy", "-to-db DSN -to-bucket URL [-verify]",
		"copy this Parley (the -data, -db and -bucket the server would use) to another database and bucket, resumably, and verify the copy"},
}

// usage prints what -h shows: how to run the server and each subcommand,
// then the server's flags.
func usage(w io.Writer, flags *flag.FlagSet) {
	fmt.Fprintf(w, "usage:\n  server [flags]\n")
	for _, c := range subcommands {
		fmt.Fprintf(w, "  server %s %s\n", c.name, c.args)
	}
	fmt.Fprintf(w, "\nWith no command, serves the /v1 API and the chat page (data in ./data by default).\n\ncommands:\n")
	for _, c := range subcommands {
		fmt.Fprintf(w, "  %-6s %s (server %s -h: its flags)\n", c.name, c.summary, c.name)
	}
	fmt.Fprintf(w, "\nbuilds: the default build opens SQLite, PostgreSQL, MySQL/MariaDB and file:// buckets;\n"+
		"  s3://, gs:// and azblob:// buckets need the build tag cloud (go run -tags cloud ./examples/server).\n")
	fmt.Fprintf(w, "\nflags of the server:\n")
	flags.PrintDefaults()
}
