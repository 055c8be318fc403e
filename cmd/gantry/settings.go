package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// envName is the environment variable that sets a flag: --database-url -> GANTRY_DATABASE_URL.
func envName(flag string) string {
	return "GANTRY_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applySettings fills every flag not given on the command line from its environment
// variable, else from the config file. The config file itself may come from GANTRY_CONFIG.
func applySettings(cmd *cobra.Command, configFile string) error {
	if configFile == "" {
		configFile = os.Getenv(envName("config"))
	}
	file, err := readConfigFile(cmd.Root(), configFile)
	if err != nil {
		return err
	}
	var firstErr error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if firstErr != nil || f.Changed || f.Name == "help" {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok {
			if err := f.Value.Set(v); err != nil {
				firstErr = usageError{fmt.Errorf("%s=%q: %v", envName(f.Name), v, err)}
			}
			return
		}
		if v, ok := file[f.Name]; ok {
			if err := f.Value.Set(v); err != nil {
				firstErr = usageError{fmt.Errorf("config file %s: %s: %v", configFile, f.Name, err)}
			}
		}
	})
	return firstErr
}

// readConfigFile reads a flat YAML map of flag names to values; unknown keys are errors.
func readConfigFile(root *cobra.Command, path string) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config file: %w", err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil, usageError{fmt.Errorf("config file %s is not valid YAML: %v", path, err)}
	}
	known := allFlagNames(root)
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		if !known[k] {
			return nil, usageError{fmt.Errorf("config file %s: unknown setting %q (keys are flag names, e.g. %s)", path, k, strings.Join(sample(known), ", "))}
		}
		switch v.(type) {
		case map[string]any, []any:
			return nil, usageError{fmt.Errorf("config file %s: %s must be a single value", path, k)}
		}
		out[k] = fmt.Sprint(v)
	}
	return out, nil
}

func allFlagNames(root *cobra.Command) map[string]bool {
	names := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	delete(names, "help")
	delete(names, "config")
	return names
}

func sample(names map[string]bool) []string {
	var out []string
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	if len(out) > 4 {
		out = out[:4]
	}
	return out
}
