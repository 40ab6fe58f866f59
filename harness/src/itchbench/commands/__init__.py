"""One module per `itchbench` subcommand: argument parsing and printing only;
the work is done in runs/, captures/ and analysis/."""
