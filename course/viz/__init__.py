"""Static pictures (matplotlib). Every widget in course.widgets draws through here,
so a notebook read on a static viewer shows the same picture the widget starts with."""
