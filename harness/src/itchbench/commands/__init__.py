"""One module per `itchbench` subcommand: argument parsing and printing only;
the work is done in runs/, captures/ and analysis/. A command imports that
work inside the functions that run it, so that building the parser (`--help`,
a usage error) loads none of the analysis stack; the choices a parser offers
come from vocabulary.py."""
