from regress.cli.main import entry

entry()
