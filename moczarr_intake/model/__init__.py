"""What a catalog is made of: the build's options, the naming rule, the entry model, hrefs, access, templates."""
