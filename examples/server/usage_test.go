package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHelpListsSubcommands runs this program's main with -h (in a process
// of its own: -h exits) and finds each subcommand with its line, then
// copy's own -h.
func TestHelpListsSubcommands(t *testing.T) {
	if args := os.Getenv("PARLEY_TEST_MAIN_ARGS"); args != "" {
		os.Args = append([]string{"server"}, strings.Fields(args)...)
		main()
		return
	}
	help := func(args string) string {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelpListsSubcommands$")
		cmd.Env = append(os.Environ(), "PARLEY_TEST_MAIN_ARGS="+args)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "server %s exits 0:\n%s", args, out)
		return string(out)
	}
	out := help("-h")
	require.NotEmpty(t, subcommands)
	for _, c := range subcommands {
		assert.Contains(t, out, "server "+c.name+" ", "the usage line of %s", c.name)
		assert.Contains(t, out, "  "+c.name+"   "+c.summary, "the line that says what %s does", c.name)
	}
	assert.Contains(t, out, "-tags cloud", "how to get the cloud buckets")
	assert.Contains(t, out, "-addr", "the server's flags")
	assert.Contains(t, help("copy -h"), "-to-db", "copy's own flags")
}
