"""The namespaces the BPMN importer reads, and the attributes it accepts without behaviour."""

from __future__ import annotations

BPMN = "http://www.omg.org/spec/BPMN/20100524/MODEL"
CAMUNDA = "http://camunda.org/schema/1.0/bpmn"
ZEEBE = "http://camunda.org/schema/zeebe/1.0"
#: Camunda 7's older namespace for ``failedJobRetryTimeCycle`` (Camunda fox).
FOX = "http://www.camunda.com/fox"
#: Namespaces read as Camunda's, as Camunda 7 and Operaton read them: Activiti's (which Camunda
#: 7 still accepts), the older Camunda one, and Operaton's.
CAMUNDA_ALIASES = frozenset(
    {
        "http://activiti.org/bpmn",
        "http://camunda.org/bpmn",
        "http://operaton.org/schema/1.0/bpmn",
    }
)
#: This project's namespace for attributes such as ``bpm:handler``.
BPM = "https://bpm.dev/schema/1.0"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
#: Namespaces of diagram interchange and of modeler decoration: ignored wherever they appear.
PRESENTATIONAL = frozenset(
    {
        "http://www.omg.org/spec/BPMN/20100524/DI",
        "http://www.omg.org/spec/DD/20100524/DC",
        "http://www.omg.org/spec/DD/20100524/DI",
        "http://bpmn.io/schema/bpmn/biocolor/1.0",
        "http://www.omg.org/spec/BPMN/non-normative/color/1.0",
        "http://camunda.org/schema/modeler/1.0",
    }
)
#: Namespaces whose elements and attributes the importer reads (what it does not read of
#: them is refused); any other but the presentational ones is another vendor's (Signavio,
#: Trisotech, Flowable, Zeebe where bpm reads nothing of it...): ignored, as Camunda 7 ignores
#: it, and listed as ignored.
READ = frozenset({"", BPMN, CAMUNDA, BPM, XSI, FOX})
#: The extension elements some element's mapper reads (``Reader.extension``): after a mapper
#: refused its element, one it did not come to read is not named as unsupported.
READ_EXTENSIONS = frozenset(
    {
        "assignmentDefinition",
        "connector",
        "executionListener",
        "failedJobRetryTimeCycle",
        "field",
        "formData",
        "in",
        "inputOutput",
        "loopCharacteristics",
        "out",
        "properties",
        "taskDefinition",
        "taskListener",
    }
)
#: Attributes of a user task that Camunda 7 reads nowhere else: on another element they are
#: ignored (and listed as ignored), as Camunda 7 ignores them.
USER_TASK_ONLY = frozenset(
    {"assignee", "candidateUsers", "candidateGroups", "dueDate", "followUpDate", "formKey"}
)
#: Camunda extension elements with every attribute Camunda 7 defines on them: any other plain
#: attribute there (``camunda:properties fields="..."``, left by a modeler plug-in) means
#: nothing to Camunda either, so it is ignored and listed, not refused.
CAMUNDA_ELEMENT_ATTRIBUTES: dict[str, frozenset[str]] = {
    "properties": frozenset(),
    "formData": frozenset({"businessKey"}),
}
#: Attributes in Camunda's namespace that Camunda 7 itself never reads, with why: ignored
#: and listed, as Camunda ignores them.
CAMUNDA_UNREAD: dict[str, str] = {
    "failedJobRetryTimeCycle": "which Camunda 7 reads only as an extension element "
    "(camunda:failedJobRetryTimeCycle inside extensionElements), never as an attribute",
    "calledElementType": "which Camunda 7 does not define (a call activity calls a process)",
}
#: The prefix a refusal names each namespace by, whatever prefix the file used.
PREFIXES = {CAMUNDA: "camunda", ZEEBE: "zeebe", BPM: "bpm", XSI: "xsi", FOX: "fox"}
#: Plain attributes without behaviour here, with the values accepted (None: any value).
HARMLESS: dict[str, frozenset[str] | None] = {
    "isExecutable": None,
    "processType": None,
    "isClosed": None,
    "gatewayDirection": None,
    "startQuantity": frozenset({"1"}),
    "completionQuantity": frozenset({"1"}),
    "isInterrupting": frozenset({"true"}),
    "parallelMultiple": frozenset({"false"}),
    "instantiate": frozenset({"false"}),
    "isImmediate": None,
    "implementation": None,
    "operationRef": None,
    "triggeredByEvent": frozenset({"false"}),
    "isForCompensation": None,
    "waitForCompletion": frozenset({"true"}),
    "itemSubjectRef": None,
    "isCollection": None,
    "dataStoreRef": None,
    "itemRef": None,
    "capacity": None,
    "isUnlimited": None,
    "categoryValueRef": None,
}
#: Camunda attributes accepted and ignored: with no behaviour here (every step is already its
#: own transaction; a version tag and tasklist flag are the modeler's bookkeeping).
CAMUNDA_IGNORED = frozenset(
    {
        "async",
        "asyncBefore",
        "asyncAfter",
        "exclusive",
        "versionTag",
        "isStartableInTasklist",
        "modelerTemplate",
        "modelerTemplateVersion",
    }
)
