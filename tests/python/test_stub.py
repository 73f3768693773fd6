"""lact.pyi (what editors and type checkers read) against the module itself: the same names, and for every function
and method the same parameters in the same order, with the same defaults and keyword-only marks as the signature
pybind11 writes on the first line of its docstring (what help() shows)."""
import ast
import os

import pytest

STUB = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "python",
                    "lact.pyi")


def parameters(function):
    """[(name, default or None, keyword-only)] of an ast function, `self` and `cls` left out."""
    a = function.args
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + [ast.literal_eval(d) for d in a.defaults]
    found = [(p.arg, d, False) for p, d in zip(positional, defaults)]
    found += [(p.arg, None if d is None else ast.literal_eval(d), True) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    return [p for p in found if p[0] not in ("self", "cls")]


def real_parameters(function):
    """parameters() of the signature pybind11 wrote on the first line of `function`'s docstring."""
    first = function.__doc__.splitlines()[0]
    name, rest = first.split("(", 1)
    arguments = rest.rsplit(") ->", 1)[0]
    return parameters(ast.parse("def %s(%s): pass" % (name, arguments)).body[0])


def stub():
    """{name: ast node} of the stub's top level, and {class: {member: ast node}}."""
    tree = ast.parse(open(STUB).read())
    top, members = {}, {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top[node.name] = node
        if isinstance(node, ast.ClassDef):
            members[node.name] = {}
            for m in node.body:
                if isinstance(m, ast.FunctionDef):
                    members[node.name][m.name] = m
                elif isinstance(m, ast.AnnAssign):
                    members[node.name][m.target.id] = m
    return top, members


def test_the_stub_names_what_the_module_has(lact):
    top, members = stub()
    assert set(lact.__all__) <= set(top), set(lact.__all__) - set(top)
    for name in top:
        assert hasattr(lact, name), "lact.pyi names lact.%s, which the module lacks" % name
    for cls in ("Model", "State", "Scene", "RenderMemoryError"):
        real = {n for n in dir(getattr(lact, cls)) if not n.startswith("_")}
        if cls == "RenderMemoryError":  # its attributes are set on each instance: only the stub's are checked
            real = set(members[cls])
        else:
            real -= set(dir(object))
        stubbed = {n for n in members[cls] if not n.startswith("_")}
        assert stubbed == real, (cls, "stub only:", stubbed - real, "module only:", real - stubbed)


@pytest.mark.parametrize("name", ["read_scene", "scene_names", "psnr", "ssim", "lpips", "camera_path"])
def test_function_signatures_match(lact, name):
    top, _ = stub()
    assert parameters(top[name]) == real_parameters(getattr(lact, name))


@pytest.mark.parametrize("cls, method", [("Model", "__init__"), ("Model", "encode"), ("Model", "render"),
                                         ("State", "save"), ("State", "load")])
def test_method_signatures_match(lact, cls, method):
    _, members = stub()
    assert parameters(members[cls][method]) == real_parameters(getattr(getattr(lact, cls), method))


def test_a_render_memory_error_has_the_attributes_the_stub_names(lact, model, scene, tmp_path):
    # The stub's RenderMemoryError attributes are those a refusal carries (set on each instance, so not in dir()).
    _, members = stub()
    state = model.encode(scene.images[scene.inputs], scene.intrinsics[scene.inputs], scene.c2w[scene.inputs])
    if os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") > 256 << 30:
        pytest.skip("a machine this large may have the memory for the render")
    side = 65536
    out = __import__("numpy").memmap(tmp_path / "out", "float32", "w+", shape=(side, side, 3))
    with pytest.raises(lact.RenderMemoryError) as raised:
        model.render(state, scene.intrinsics[3] * side / 48, scene.c2w[3], size=(side, side), out=out)
    for name in members["RenderMemoryError"]:
        assert hasattr(raised.value, name), name
