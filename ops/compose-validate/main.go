// compose-validate loads a compose file with compose-go (the loader of Docker Compose v2),
// validating it against the Compose specification, and prints the services it defines.
//
//	compose-validate [--profile NAME]... [--json] docker-compose.yml
//
// --profile activates a profile (as `docker compose --profile`); --json prints the loaded
// project (anchors and merges resolved) instead of the service names, for tests to inspect.
package main

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/compose-spec/compose-go/v2/cli"
)

func usage() {
	fmt.Fprintln(os.Stderr, "usage: compose-validate [--profile NAME]... [--json] docker-compose.yml")
	os.Exit(2)
}

func main() {
	var profiles []string
	var file string
	asJSON := false
	args := os.Args[1:]
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--profile":
			if i+1 >= len(args) {
				usage()
			}
			i++
			profiles = append(profiles, args[i])
		case "--json":
			asJSON = true
		default:
			if file != "" {
				usage()
			}
			file = args[i]
		}
	}
	if file == "" {
		usage()
	}
	opts, err := cli.NewProjectOptions([]string{file}, cli.WithOsEnv, cli.WithName("streamfs"),
		cli.WithProfiles(profiles))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "invalid compose file:", err)
		os.Exit(1)
	}
	if asJSON {
		out, err := project.MarshalJSON()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(string(out))
		return
	}
	names := project.ServiceNames()
	sort.Strings(names)
	for _, name := range names {
		fmt.Println(name)
	}
}
