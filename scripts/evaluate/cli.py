"""Command-line helpers shared by the evaluation scripts (standard library only)."""


def take_option(args, name, default):
    """Removes `name VALUE` from `args` and returns VALUE, or `default` when absent."""
    if name in args:
        i = args.index(name)
        if i + 1 >= len(args):
            raise SystemExit("%s needs a value" % name)
        value = args[i + 1]
        del args[i:i + 2]
        return value
    return default
